// Upstream: a worker's connection to its job's coordinator, shared by two threads: the worker's
// main thread (hello, metrics, checkpoints, done — and the only reader) and, once the worker is
// admitted, a heartbeat thread that sends an empty heartbeat frame every interval. So the
// coordinator tells a live worker that is busy computing or blocked on a peer from a dead, stopped
// or cut-off one (cluster.heartbeat_timeout, see dtrain-job.toml(5)).
//
//   Upstream up(std::move(stream), job);
//   up.Send(net::MessageType::kControl, hello.dump(), 10s);
//   Result<net::Frame> reply = up.Read(24h);
//   up.StartHeartbeats(HeartbeatInterval(job.cluster.heartbeat_timeout), &g_stop);
//
// Writes are serialised by a mutex, so frames never interleave; FrameStream's full duplex lets the
// main thread read meanwhile. An elastic job's coordinator may send one unsolicited frame, a
// `regroup_now` notice (control_protocol.md): Read remembers it and reads on, and
// TakeRegroupNotice says, without blocking, whether one came (reading any that wait). A heartbeat
// that cannot be sent means the coordinator is gone: the flag given to StartHeartbeats is raised,
// so training stops at its next step.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <thread>

#include "core/net/frame_stream.h"
#include "core/status.h"

namespace dtrain::worker {

// How often a worker beats for a job's heartbeat_timeout: a fifth of it, between 50 ms and 1 s.
std::chrono::milliseconds HeartbeatInterval(double heartbeat_timeout_seconds);

class Upstream {
 public:
  Upstream(net::FrameStream stream, std::int64_t job);
  ~Upstream();  // stops the heartbeats
  Upstream(const Upstream&) = delete;
  Upstream& operator=(const Upstream&) = delete;

  // One frame of `type` for this job, from the stream's sender (set before heartbeats start).
  Status Send(net::MessageType type, std::string_view payload, std::chrono::milliseconds timeout);
  // The next frame from the coordinator, past any regroup_now notice. The main thread only.
  Result<net::Frame> Read(std::chrono::milliseconds timeout);
  // Whether a regroup_now notice has come since the last call (true once per notice); reads the
  // frames already waiting, never blocks for one. The main thread only, between replies.
  bool TakeRegroupNotice();
  // Forgets a notice already read (one that came before the regroup answer it asked for).
  void DropRegroupNotice() { regroup_notice_ = false; }
  void set_sender(std::uint32_t sender) { stream_.set_sender(sender); }
  std::int64_t job() const { return job_; }

  // Starts the heartbeat thread (once). `on_loss` is raised when a heartbeat cannot be sent.
  void StartHeartbeats(std::chrono::milliseconds interval, std::atomic<bool>* on_loss);

 private:
  void Beat(std::chrono::milliseconds interval, std::atomic<bool>* on_loss);

  net::FrameStream stream_;
  const std::int64_t job_;
  bool regroup_notice_ = false;  // the main thread's
  std::mutex write_mu_;          // one writer at a time
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // guarded by stop_mu_
  std::thread heartbeats_;
};

}  // namespace dtrain::worker
