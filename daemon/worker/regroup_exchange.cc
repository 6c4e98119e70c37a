#include "daemon/worker/regroup_exchange.h"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "daemon/worker/control_reply.h"

namespace dtrain::worker {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

Result<runner::Membership> ParseMembership(const json& reply) {
  const auto epoch = reply.find("membership");
  const auto members = reply.find("members");
  const auto leader = reply.find("leader");
  if (epoch == reply.end() || !epoch->is_number_integer() || members == reply.end() ||
      !members->is_array() || leader == reply.end() || !leader->is_number_integer()) {
    return Status::Error("malformed regroup answer from the daemon");
  }
  runner::Membership out;
  out.epoch = epoch->get<std::int64_t>();
  out.leader = leader->get<int>();
  for (const json& r : *members) {
    if (!r.is_number_integer()) return Status::Error("malformed regroup answer from the daemon");
    out.members.push_back(r.get<int>());
  }
  Result<PeerTable> table = ParsePeerTable(reply);
  if (!table.ok()) return table.status();
  out.peers = std::move(table.value().peers);
  return out;
}

}  // namespace

std::chrono::milliseconds RegroupTimeout(const config::JobConfig& job) {
  return 2 * runner::JobTimeout(job) + 30s;
}

runner::Coordinate RegroupOverChannel(Upstream& upstream, std::chrono::milliseconds timeout) {
  return [&upstream, timeout](const runner::RegroupRequest& request) -> Result<runner::Membership> {
    const json message = {{"v", 1},
                          {"type", "regroup"},
                          {"membership", request.membership},
                          {"completed_step", request.completed_step}};
    if (Status sent = upstream.Send(net::MessageType::kControl, message.dump(), 10s); !sent.ok()) {
      return sent;
    }
    Result<json> answer = ReadReply(upstream, timeout);
    upstream.DropRegroupNotice();
    if (!answer.ok()) return answer.status();
    return ParseMembership(answer.value());
  };
}

}  // namespace dtrain::worker
