#include "core/train/early_stopping.h"

#include <cmath>
#include <cstdio>

#include "core/train/metrics.h"

namespace dtrain::train {

std::string_view EarlyStoppingMetricName(EarlyStoppingMetric metric) {
  return metric == EarlyStoppingMetric::kEvalAccuracy ? "eval_accuracy" : "eval_loss";
}

Result<EarlyStoppingMetric> ParseEarlyStoppingMetric(std::string_view name) {
  if (name == "eval_accuracy") return EarlyStoppingMetric::kEvalAccuracy;
  if (name == "eval_loss") return EarlyStoppingMetric::kEvalLoss;
  return Status::Error("unknown early-stopping metric '" + std::string(name) +
                       "' (choices: " + std::string(kEarlyStoppingMetricChoices) + ")");
}

bool Improves(EarlyStoppingMetric metric, double value, double best, double min_delta) {
  return HigherIsBetter(EarlyStoppingMetricName(metric)) ? value - best > min_delta
                                                         : best - value > min_delta;
}

EarlyStopping::Verdict EarlyStopping::Observe(double value, std::int64_t step) {
  bool improved = false;
  if (std::isfinite(value)) {
    if (state_.best_step < 0) {
      improved = true;
    } else {
      improved = Improves(options_.metric, value, state_.best, options_.min_delta);
    }
  }
  if (improved) {
    state_ = {value, step, 0};
    return Verdict::kImproved;
  }
  ++state_.since_best;
  return options_.enabled() && state_.since_best >= options_.patience ? Verdict::kStop
                                                                      : Verdict::kNotImproved;
}

std::string EarlyStopping::Describe(std::int64_t step) const {
  std::string text = "stopped early at step " + std::to_string(step) + ": ";
  const std::string name(EarlyStoppingMetricName(options_.metric));
  if (state_.best_step < 0) {
    return text + "no finite " + name + " in " + std::to_string(state_.since_best) + " evaluations";
  }
  char best[32];
  std::snprintf(best, sizeof best, "%.6g", state_.best);
  return text + "best " + name + " " + best + " at step " + std::to_string(state_.best_step) +
         ", no improvement by more than min_delta in " + std::to_string(state_.since_best) +
         " evaluations since";
}

}  // namespace dtrain::train
