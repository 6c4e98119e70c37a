// RunRecorder: where a training run's records go — straight into the store (`dtrain run`, the
// daemon) or up a worker's connection to its daemon (worker processes never open SQLite).
//
//   StoreRecorder recorder(store, job_id, /*worker=*/0, /*keep=*/3);
//   TrainRecorded(trainer, policy, recorder, options, -1);
//
// One thread at a time (the training thread).
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "core/train/class_report.h"
#include "core/train/metrics.h"
#include "daemon/store/checkpoint.h"
#include "daemon/store/store.h"

namespace dtrain::runner {

class RunRecorder {
 public:
  virtual ~RunRecorder() = default;
  // Queues the points; returns at once.
  virtual void RecordMetrics(std::span<const train::MetricPoint> points) = 0;
  // Returns once the checkpoint is committed (durable), or why it is not.
  virtual Status SaveCheckpoint(const store::CheckpointView& checkpoint) = 0;
  // Returns once `model` is committed as the job's best model (store::Store::SaveBestModel).
  virtual Status SaveBestModel(const store::BestModelInfo& best,
                               const store::CheckpointView& model) = 0;
  // Returns once `report`, the final evaluation's at `step`, is committed as the job's
  // (store::Store::SaveClassReport).
  virtual Status SaveClassReport(std::int64_t step, const train::ClassReport& report) = 0;
};

class StoreRecorder final : public RunRecorder {
 public:
  // Keeps the newest `keep` checkpoints of the job. `store` must outlive the recorder.
  StoreRecorder(store::Store& store, std::int64_t job_id, int worker, int keep)
      : store_(store), job_id_(job_id), worker_(worker), keep_(keep) {}

  void RecordMetrics(std::span<const train::MetricPoint> points) override {
    store_.AppendMetrics(job_id_, worker_, points);
  }
  Status SaveCheckpoint(const store::CheckpointView& checkpoint) override {
    return store_.SaveCheckpoint(job_id_, checkpoint, keep_);
  }
  Status SaveBestModel(const store::BestModelInfo& best,
                       const store::CheckpointView& model) override {
    return store_.SaveBestModel(job_id_, best, model);
  }
  Status SaveClassReport(std::int64_t step, const train::ClassReport& report) override {
    return store_.SaveClassReport(job_id_, step, report);
  }

 private:
  store::Store& store_;
  std::int64_t job_id_;
  int worker_;
  int keep_;
};

// Forwards a MetricSink's points to a recorder (metrics recorded outside a training loop, such as a
// parameter server's). `recorder` must outlive the sink.
class MetricsToRecorder final : public train::MetricSink {
 public:
  explicit MetricsToRecorder(RunRecorder& recorder) : recorder_(recorder) {}
  void Record(std::span<const train::MetricPoint> points) override {
    recorder_.RecordMetrics(points);
  }

 private:
  RunRecorder& recorder_;
};

}  // namespace dtrain::runner
