// Metrics the training loop emits, and the sink interface that records or forwards them.
//
//   class PrintSink : public MetricSink { void Record(std::span<const MetricPoint> p) override; };
//
// Names are stable (they are the `name` column of the store and the keys of `dtrain metrics`):
//   train_loss, train_accuracy, lr, grad_norm, samples_per_sec   (every log_every steps)
//   eval_loss, eval_accuracy (classification) or eval_mse (regression)   (every evaluation)
//   compute_seconds, comm_seconds, wait_seconds, bytes_sent   (every log_every steps, when the
//     job has several workers: this worker's totals over the steps since the previous point)
//   objective, step_length, evaluations (and the names above; step = the iteration)   (every
//     iteration of an L-BFGS run, daemon/runner/lbfgs_run.h)
// A sink is called from the training thread only.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace dtrain::train {

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
