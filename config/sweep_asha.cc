#include "config/sweep_asha.h"

#include <algorithm>
#include <cmath>

namespace dtrain::config {

std::vector<std::int64_t> AshaRungs(const AshaOptions& options) {
  std::vector<std::int64_t> rungs;
  // Below max_steps, so the product cannot overflow (max_steps <= kMaxSteps, factor <= 100).
  for (std::int64_t steps = options.min_steps; steps < options.max_steps;
       steps *= options.reduction_factor) {
    rungs.push_back(steps);
  }
  rungs.push_back(options.max_steps);
  return rungs;
}

std::vector<std::string> AshaRungOverrides(std::int64_t steps) {
  return {std::string(kAshaKeys[0]) + "=" + std::to_string(steps),
          std::string(kAshaKeys[1]) + "=0"};
}

AshaAction NextAshaAction(const AshaOptions& options, SweepGoal goal, std::int64_t max_trials,
                          std::span<const AshaTrial> trials) {
  const std::vector<std::int64_t> rungs = AshaRungs(options);
  const std::int64_t top = static_cast<std::int64_t>(rungs.size()) - 1;
  for (std::int64_t k = top - 1; k >= 0; --k) {
    std::vector<std::int64_t> completed;  // trial indices, ascending
    for (std::size_t i = 0; i < trials.size(); ++i) {
      if (static_cast<std::int64_t>(trials[i].metrics.size()) > k) {
        completed.push_back(static_cast<std::int64_t>(i));
      }
    }
    const auto at = static_cast<std::size_t>(k);
    std::stable_sort(completed.begin(), completed.end(), [&](std::int64_t a, std::int64_t b) {
      return Better(goal, trials[a].metrics[at], trials[b].metrics[at]);
    });
    const auto quota = static_cast<std::size_t>(static_cast<std::int64_t>(completed.size()) /
                                                options.reduction_factor);
    for (std::size_t r = 0; r < quota; ++r) {
      const AshaTrial& t = trials[completed[r]];
      if (t.metrics.size() == at + 1 && !t.running && !t.ended && !std::isnan(t.metrics[at])) {
        return {AshaAction::Kind::kPromote, completed[r], static_cast<int>(k + 1), rungs[at + 1]};
      }
    }
  }
  const auto started = static_cast<std::int64_t>(trials.size());
  if (started < max_trials) return {AshaAction::Kind::kStart, started, 0, rungs.front()};
  const bool running =
      std::any_of(trials.begin(), trials.end(), [](const AshaTrial& t) { return t.running; });
  return {running ? AshaAction::Kind::kWait : AshaAction::Kind::kDone, -1, -1, 0};
}

std::string AshaPausedReason(int rung, std::int64_t steps) {
  return "paused by ASHA at rung " + std::to_string(rung) + " (" + std::to_string(steps) +
         " steps)";
}

std::string AshaPromotedReason(int rung, std::int64_t steps) {
  return "promoted by ASHA to rung " + std::to_string(rung) + " (" + std::to_string(steps) +
         " steps)";
}

std::string AshaStoppedReason(const AshaOptions& options, int rung) {
  const std::vector<std::int64_t> rungs = AshaRungs(options);
  const int last = static_cast<int>(rungs.size()) - 1;
  return "stopped by ASHA at rung " + std::to_string(rung) + " of " + std::to_string(last) + " (" +
         std::to_string(rungs[static_cast<std::size_t>(rung)]) + " of " +
         std::to_string(rungs.back()) + " steps): not among the top 1/" +
         std::to_string(options.reduction_factor) + " of its rung";
}

bool RanksBefore(SweepGoal goal, const TrialScore& a, const TrialScore& b) {
  if (a.metric.has_value() != b.metric.has_value()) return a.metric.has_value();
  if (!a.metric) return false;
  if (a.rung != b.rung) return a.rung > b.rung;
  return Better(goal, *a.metric, *b.metric);
}

}  // namespace dtrain::config
