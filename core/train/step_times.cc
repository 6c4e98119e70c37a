#include "core/train/step_times.h"

#include <algorithm>
#include <cmath>

namespace dtrain::train {

void StepTimes::Add(double seconds) {
  if (seconds_.size() < kKept) {
    seconds_.push_back(seconds);
    return;
  }
  seconds_[next_] = seconds;
  next_ = (next_ + 1) % kKept;
}

double StepTimes::Percentile(double percent) const {
  if (seconds_.empty()) return 0.0;
  std::vector<double> sorted = seconds_;
  const auto rank =
      static_cast<std::size_t>(std::ceil(percent / 100.0 * static_cast<double>(sorted.size())));
  const std::size_t at = std::clamp<std::size_t>(rank, 1, sorted.size()) - 1;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(at), sorted.end());
  return sorted[at];
}

void StepTimes::Clear() {
  seconds_.clear();
  next_ = 0;
}

}  // namespace dtrain::train
