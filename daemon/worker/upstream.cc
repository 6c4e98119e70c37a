#include "daemon/worker/upstream.h"

#include <algorithm>
#include <cmath>

namespace dtrain::worker {

using namespace std::chrono_literals;

std::chrono::milliseconds HeartbeatInterval(double heartbeat_timeout_seconds) {
  const auto fifth =
      std::chrono::milliseconds(std::llround(heartbeat_timeout_seconds * 1000.0 / 5.0));
  return std::clamp<std::chrono::milliseconds>(fifth, 50ms, 1000ms);
}

Upstream::Upstream(net::FrameStream stream, std::int64_t job)
    : stream_(std::move(stream)), job_(job) {}

Upstream::~Upstream() {
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (heartbeats_.joinable()) heartbeats_.join();
}

Status Upstream::Send(net::MessageType type, std::string_view payload,
                      std::chrono::milliseconds timeout) {
  std::lock_guard lock(write_mu_);
  return stream_.WriteString(type, static_cast<std::uint64_t>(job_), 0, payload, timeout);
}

Result<net::Frame> Upstream::Read(std::chrono::milliseconds timeout) { return stream_.Read(timeout); }

void Upstream::StartHeartbeats(std::chrono::milliseconds interval, std::atomic<bool>* on_loss) {
  if (heartbeats_.joinable()) return;
  heartbeats_ = std::thread([this, interval, on_loss] { Beat(interval, on_loss); });
}

void Upstream::Beat(std::chrono::milliseconds interval, std::atomic<bool>* on_loss) {
  std::unique_lock stop(stop_mu_);
  while (!stop_cv_.wait_for(stop, interval, [this] { return stopping_; })) {
    stop.unlock();
    // A coordinator that does not take a few bytes within 30 s is gone.
    const Status sent = Send(net::MessageType::kHeartbeat, {}, 30s);
    stop.lock();
    if (!sent.ok()) {
      if (on_loss != nullptr) on_loss->store(true);
      return;
    }
  }
}

}  // namespace dtrain::worker
