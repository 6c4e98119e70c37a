#include "daemon/worker/upstream.h"

#include <poll.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>

namespace dtrain::worker {

using namespace std::chrono_literals;

namespace {

bool IsRegroupNotice(const net::Frame& frame) {
  if (frame.header.type != net::MessageType::kControl) return false;
  const nlohmann::json message = nlohmann::json::parse(frame.payload, nullptr, false);
  if (!message.is_object()) return false;
  const auto type = message.find("type");
  return type != message.end() && *type == "regroup_now";
}

}  // namespace

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

Result<net::Frame> Upstream::Read(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    Result<net::Frame> frame = stream_.Read(std::max(left, 0ms));
    if (!frame.ok() || !IsRegroupNotice(frame.value())) return frame;
    regroup_notice_ = true;
  }
}

bool Upstream::TakeRegroupNotice() {
  pollfd waiting{.fd = stream_.fd(), .events = POLLIN, .revents = 0};
  // A whole frame follows its first bytes at once: the coordinator writes each in one go.
  while (::poll(&waiting, 1, 0) == 1 && (waiting.revents & POLLIN) != 0) {
    Result<net::Frame> frame = stream_.Read(10s);
    if (!frame.ok() || !IsRegroupNotice(frame.value())) break;
    regroup_notice_ = true;
  }
  return std::exchange(regroup_notice_, false);
}

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
