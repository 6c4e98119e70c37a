// EarlyStopping: the rule of train.early_stopping, the one judgement every training loop applies
// to its evaluations (through train::JudgeEvaluation: the dense Trainer, the sparse trainer and
// L-BFGS). An evaluation improves on the best so far
// when its metric is better by more than min_delta (eval_accuracy higher, eval_loss lower; the
// first finite value always does); after `patience` evaluations in a row that do not, the run
// stops early and succeeds. With patience 0 (off) it still judges, never stopping: the trainer
// keeps the best model by the same judgement (TrainOptions::keep_best).
//
//   EarlyStopping early(options.early_stopping);
//   EarlyStopping::Verdict v = early.Observe(result.loss, step);  // kImproved: keep the model
//   if (v == EarlyStopping::Verdict::kStop) ... propose the stop
//   std::string why = early.Describe(step);  // "stopped early at step 900: best eval_loss ..."
//
// Invariants: best_step is -1 exactly when no evaluation improved yet (best is then NaN);
// since_best counts the evaluations after best_step (all of them before a first best), and is
// below patience until Observe says kStop (never, with patience 0). The state is plain data,
// stored with each checkpoint (daemon/store/checkpoint_format.md), so a resumed run judges as the
// uninterrupted one would.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace dtrain::train {

enum class EarlyStoppingMetric { kEvalAccuracy, kEvalLoss };

// "eval_accuracy", "eval_loss": the job file's names.
std::string_view EarlyStoppingMetricName(EarlyStoppingMetric metric);
Result<EarlyStoppingMetric> ParseEarlyStoppingMetric(std::string_view name);
inline constexpr std::string_view kEarlyStoppingMetricChoices = "eval_accuracy, eval_loss";

// Whether `value` beats `best` by more than `min_delta` in the metric's direction
// (HigherIsBetter, metrics.h: eval_accuracy higher, eval_loss lower). Both finite.
bool Improves(EarlyStoppingMetric metric, double value, double best, double min_delta);

struct EarlyStoppingOptions {
  EarlyStoppingMetric metric = EarlyStoppingMetric::kEvalLoss;
  std::int64_t patience = 0;  // evaluations without improvement before stopping; 0: off
  double min_delta = 0.0;     // an improvement must exceed it (>= 0)

  bool enabled() const { return patience > 0; }
  bool operator==(const EarlyStoppingOptions&) const = default;
};

struct EarlyStoppingState {
  double best = std::numeric_limits<double>::quiet_NaN();  // the metric's best value so far
  std::int64_t best_step = -1;                             // the step it was reached at
  std::int64_t since_best = 0;  // evaluations since then that did not improve on it

  bool operator==(const EarlyStoppingState& o) const {
    return best_step == o.best_step && since_best == o.since_best &&
           (best == o.best || (std::isnan(best) && std::isnan(o.best)));
  }
};

class EarlyStopping {
 public:
  enum class Verdict { kImproved, kNotImproved, kStop };

  explicit EarlyStopping(const EarlyStoppingOptions& options) : options_(options) {}

  // Judges one evaluation of the metric (`value`, NaN never improves) after `step` steps.
  Verdict Observe(double value, std::int64_t step);

  const EarlyStoppingOptions& options() const { return options_; }
  const EarlyStoppingState& state() const { return state_; }
  // Takes the state a checkpoint stored (the run goes on from there).
  void Restore(const EarlyStoppingState& state) { state_ = state; }

  // The reason a job that stopped early at `step` gives: the step, the metric's best value and
  // the step it was reached at.
  std::string Describe(std::int64_t step) const;

 private:
  EarlyStoppingOptions options_;
  EarlyStoppingState state_;
};

}  // namespace dtrain::train
