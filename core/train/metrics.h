// Metrics the training loop emits, and the sink interface that records or forwards them.
//
//   class PrintSink : public MetricSink { void Record(std::span<const MetricPoint> p) override; };
//
// Names are stable (they are the `name` column of the store and the keys of `dtrain metrics`):
//   train_loss, train_accuracy, lr, grad_norm, samples_per_sec   (every log_every steps)
//   step_seconds_p50, step_seconds_p95   (every log_every steps: the median and 95th percentile
//     of this worker's step times since its previous point, its last 10 000 steps at most;
//     values of one worker, not counters to sum)
//   eval_loss, eval_accuracy (classification) or eval_mse (regression)   (every evaluation)
//   compute_seconds, comm_seconds, wait_seconds, bytes_sent   (every log_every steps, when the
//     job has several workers: this worker's totals over the steps since the previous point)
//   compression_seconds, wire_bytes, compression_ratio   (with them, when the job compresses its
//     gradients: encoding and decoding time, bytes sent, and what the uncompressed exchange
//     would have sent over wire_bytes)
//   objective, step_length, evaluations (and the names above; step = the iteration)   (every
//     iteration of an L-BFGS run, daemon/runner/lbfgs_run.h)
//   planned_steps   (once as a run starts or resumes, at the step it starts from: the steps it
//     plans in all; daemon/runner/recorded_training.h)
//   epoch_rows   (every log_every steps, in sync modes, whose replicas take one global batch a
//     step: the training rows the replicas have taken together of the epoch the step was in)
//   rows_per_epoch   (with planned_steps, in sync modes: the training rows an epoch takes)
//   dropped_gradients   (every log_every steps, with backup workers: the steps so far that went
//     on without this worker's gradient, its late ones and those it skipped; cumulative)
//   nonzero_weights   (once at the end of a sparse run: its model's weights that are not 0;
//     daemon/runner/sparse_run.h)
// The window counters (compute_seconds ... bytes_sent, a pipeline's pipeline_idle_seconds,
// activation_send_seconds, activation_bytes, and compression_seconds, wire_bytes) count the steps
// since the worker's previous point, not totals: IsWindowCounter. A sink is called from the
// training thread only.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace dtrain::train {

inline constexpr std::string_view kPlannedSteps = "planned_steps";
inline constexpr std::string_view kEpochRows = "epoch_rows";
inline constexpr std::string_view kRowsPerEpoch = "rows_per_epoch";
inline constexpr std::string_view kDroppedGradients = "dropped_gradients";
inline constexpr std::string_view kNonzeroWeights = "nonzero_weights";

// Whether the metric `name` counts one worker's last log_every steps rather than a value or a
// total (see above).
constexpr bool IsWindowCounter(std::string_view name) {
  return name == "compute_seconds" || name == "comm_seconds" || name == "wait_seconds" ||
         name == "bytes_sent" || name == "pipeline_idle_seconds" ||
         name == "activation_send_seconds" || name == "activation_bytes" ||
         name == "compression_seconds" || name == "wire_bytes" || name == "exposed_comm_seconds";
}

// The direction the metric `name` improves in: higher for accuracies and AUCs (a name ending in
// "accuracy" or "auc"), lower for the rest (losses, mse). The one table of it: early stopping and
// the best model (early_stopping.h), a sweep's natural goal and `dtrain compare`
// (config::NaturalGoal) all ask here.
constexpr bool HigherIsBetter(std::string_view name) {
  return name.ends_with("accuracy") || name.ends_with("auc");
}

struct MetricPoint {
  std::int64_t step = 0;  // optimizer steps completed
  double epoch = 0.0;     // fractional epochs completed
  std::string name;
  double value = 0.0;
};

class MetricSink {
 public:
  virtual ~MetricSink() = default;
  // One batch of points that belong together (same step).
  virtual void Record(std::span<const MetricPoint> points) = 0;
};

}  // namespace dtrain::train
