// StepTimes: the durations of a log window's steps, for the step_seconds_p50 and
// step_seconds_p95 metrics (a slow replica, or slow steps of one, show as a p95 far above the
// p50). Keeps the window's last kKept steps at most, so a long train.log_every costs bounded
// memory; percentiles are of those, by nearest rank.
//
//   times.Add(seconds);                        // each step
//   double p95 = times.Percentile(95);         // at a log point, then
//   times.Clear();
//
// One thread at a time.
#pragma once

#include <cstddef>
#include <vector>

namespace dtrain::train {

class StepTimes {
 public:
  static constexpr std::size_t kKept = 10000;

  void Add(double seconds);
  // The smallest kept duration that at least `percent` % of the kept ones do not exceed
  // (0 < percent <= 100); 0 when none is kept.
  double Percentile(double percent) const;
  void Clear();

 private:
  std::vector<double> seconds_;  // a ring of the last kKept once full
  std::size_t next_ = 0;         // where the ring writes next, once full
};

}  // namespace dtrain::train
