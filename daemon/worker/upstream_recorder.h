// UpstreamRecorder: a RunRecorder that sends a worker's metrics and checkpoints to its daemon
// over the worker's connection (daemon/control_protocol.md, "Worker messages").
//
//   upstream.set_sender(rank);   // frames carry the worker's rank
//   UpstreamRecorder recorder(upstream);
//   runner::TrainRecorded(trainer, policy, recorder, options, -1);
//
// SaveCheckpoint, SaveBestModel and SaveClassReport return once the daemon acknowledged the commit.
// One thread at a time (the Upstream's heartbeats may run beside it).
#pragma once

#include <cstdint>

#include "daemon/runner/recorder.h"
#include "daemon/worker/upstream.h"

namespace dtrain::worker {

class UpstreamRecorder final : public runner::RunRecorder {
 public:
  // `upstream` must outlive the recorder.
  explicit UpstreamRecorder(Upstream& upstream) : upstream_(upstream) {}

  void RecordMetrics(std::span<const train::MetricPoint> points) override;
  Status SaveCheckpoint(const store::CheckpointView& checkpoint) override;
  // A `best model` frame: the value, then the model's blob (the daemon knows the metric).
  Status SaveBestModel(const store::BestModelInfo& best,
                       const store::CheckpointView& model) override;
  // A `class_report` control message: the step and the confusion matrix's rows.
  Status SaveClassReport(std::int64_t step, const train::ClassReport& report) override;
  // The first failure to send metrics (they are fire-and-forget), if any.
  const Status& metrics_status() const { return metrics_status_; }

 private:
  // Sends `payload` and waits for the daemon's acknowledgement of its commit.
  Status SendAndAwaitCommit(net::MessageType type, const std::string& payload,
                            std::string_view what);

  Upstream& upstream_;
  Status metrics_status_;
};

}  // namespace dtrain::worker
