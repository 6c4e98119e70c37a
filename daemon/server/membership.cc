#include "daemon/server/membership.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "core/net/frame_stream.h"
#include "core/net/host_info.h"

namespace dtrain::server {
namespace {

using json = nlohmann::json;

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What a peer's answer to a heartbeat says of it.
struct Answer {
  std::string name;
  int cores = 0;
  int running = 0;
  int queued = 0;
};

// One heartbeat on an authenticated connection: the peer's state, or why there is none.
Result<Answer> Heartbeat(net::FrameStream& stream, const std::string& self_name,
                         std::chrono::milliseconds timeout) {
  const json request = {{"v", 1}, {"type", "node_heartbeat"}, {"name", self_name}};
  if (Status sent = stream.WriteString(net::MessageType::kControl, 0, 0, request.dump(), timeout);
      !sent.ok()) {
    return sent;
  }
  Result<net::Frame> frame = stream.Read(timeout);
  if (!frame.ok()) return frame.status();
  const json reply = json::parse(frame.value().payload, nullptr, false);
  if (!reply.is_object() || reply.value("ok", false) != true || !reply.contains("node") ||
      !reply["node"].is_object()) {
    const std::string why = reply.is_object() ? reply.value("error", std::string("no node state"))
                                              : std::string("not a JSON object");
    return Status::Error("bad heartbeat answer: " + why);
  }
  const json& node = reply["node"];
  Answer a;
  a.name = node.value("name", std::string());
  a.cores = node.value("cores", 0);
  a.running = node.value("running", 0);
  a.queued = node.value("queued", 0);
  return a;
}

}  // namespace

Membership::Membership(std::vector<std::string> peers, const net::ClusterKey* key,
                       std::string self_name, MembershipOptions options)
    : key_(key), self_name_(std::move(self_name)), options_(options) {
  const double now = UnixNow();
  for (std::string& address : peers) {
    PeerState p;
    p.address = std::move(address);
    p.since = now;
    p.error = "no answer yet";
    peers_.push_back(std::move(p));
  }
}

Membership::~Membership() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void Membership::Start() {
  for (std::size_t i = 0; i < peers_.size(); ++i) threads_.emplace_back(&Membership::Watch, this, i);
}

std::vector<PeerState> Membership::Snapshot() const {
  std::lock_guard lock(mu_);
  return peers_;
}

bool Membership::Pause(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  return !stop_cv_.wait_for(lock, d, [this] { return stopping_; });
}

void Membership::MarkDown(std::size_t index, std::string why) {
  std::lock_guard lock(mu_);
  PeerState& p = peers_[index];
  if (p.up) p.since = UnixNow();
  p.up = false;
  p.error = std::move(why);
}

void Membership::Watch(std::size_t index) {
  std::string address;
  {
    std::lock_guard lock(mu_);
    address = peers_[index].address;
  }
  const std::optional<net::HostPort> target = net::SplitHostPort(address);
  if (!target) {  // the configuration was checked: only a caller that skipped it gets here
    MarkDown(index, "not a HOST:PORT address");
    while (Pause(options_.interval)) {
    }
    return;
  }
  do {
    Result<net::FrameStream> connected =
        net::FrameStream::ConnectTcp(target->host, target->port, options_.timeout);
    if (!connected.ok()) {
      MarkDown(index, connected.status().message());
      continue;
    }
    net::FrameStream& stream = connected.value();
    if (Status auth = net::AuthenticateClient(stream, *key_, options_.timeout); !auth.ok()) {
      MarkDown(index, auth.message());
      continue;
    }
    for (;;) {
      Result<Answer> answer = Heartbeat(stream, self_name_, options_.timeout);
      if (!answer.ok()) {
        MarkDown(index, answer.status().message());
        break;
      }
      {
        std::lock_guard lock(mu_);
        PeerState& p = peers_[index];
        const double now = UnixNow();
        if (!p.up) p.since = now;
        p.up = true;
        p.last_seen = now;
        p.name = answer.value().name;
        p.cores = answer.value().cores;
        p.running = answer.value().running;
        p.queued = answer.value().queued;
        p.error.clear();
      }
      if (!Pause(options_.interval)) return;
    }
  } while (Pause(options_.interval));
}

}  // namespace dtrain::server
