// UpstreamRecorder: a RunRecorder that sends a worker's metrics and checkpoints to its daemon
// over the worker's connection (daemon/control_protocol.md, "Worker messages").
//
//   stream.set_sender(rank);   // frames carry the worker's rank
//   UpstreamRecorder recorder(stream, job);
//   runner::TrainRecorded(trainer, policy, recorder, options, -1);
//
// SaveCheckpoint returns once the daemon acknowledged the commit. One thread at a time.
#pragma once

#include <cstdint>

#include "core/net/frame_stream.h"
#include "daemon/runner/recorder.h"

namespace dtrain::worker {

class UpstreamRecorder final : public runner::RunRecorder {
 public:
  // `stream` must outlive the recorder.
  UpstreamRecorder(net::FrameStream& stream, std::int64_t job) : stream_(stream), job_(job) {}

  void RecordMetrics(std::span<const train::MetricPoint> points) override;
  Status SaveCheckpoint(const store::CheckpointData& checkpoint) override;
  // The first failure to send metrics (they are fire-and-forget), if any.
  const Status& metrics_status() const { return metrics_status_; }

 private:
  net::FrameStream& stream_;
  std::int64_t job_;
  Status metrics_status_;
};

}  // namespace dtrain::worker
