#include "daemon/server/nodes_view.h"

namespace dtrain::server {
namespace {

using nlohmann::json;

json PeerJson(const PeerState& p) {
  return {{"name", p.name},
          {"address", p.address},
          {"state", p.up ? "up" : "down"},
          {"since", p.since},
          {"last_seen", p.last_seen > 0 ? json(p.last_seen) : json(nullptr)},
          {"cores", p.cores},
          {"running", p.running},
          {"queued", p.queued},
          {"error", p.error}};
}

}  // namespace

json NodesJson(const std::string& node_name, const std::string& address, const JobManager& jobs,
               const Membership* membership) {
  json nodes = json::array({json{{"name", node_name},
                                 {"address", address},
                                 {"state", "up"},
                                 {"self", true},
                                 {"cores", jobs.cores()},
                                 {"running", jobs.running()},
                                 {"queued", jobs.queued()}}});
  if (membership != nullptr) {
    for (const PeerState& p : membership->Snapshot()) nodes.push_back(PeerJson(p));
  }
  return nodes;
}

}  // namespace dtrain::server
