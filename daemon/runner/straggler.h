// Straggler: for tests and benches of slow replicas (backup workers), makes one replica slower on
// some of its steps. Off unless the process's environment sets DTRAIN_STRAGGLE="RANK PERCENT
// FACTOR" (the daemon passes it on to its jobs' processes from its own environment, like
// DTRAIN_RECORD_ROWS; a submitter cannot set it): then the replica at RANK, on PERCENT % of its
// steps, sleeps FACTOR - 1 times its previous step's duration before computing the step, so that
// step takes about FACTOR times as long.
//
// Which steps is a pure function of the step number (a hash of it), so a redone step straggles
// again. A step's duration is the time from its start to the next step's, less any sleep of its
// own; the first step a process takes never sleeps.
// One thread at a time (the training thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

namespace dtrain::runner {

struct StraggleSettings {
  int rank = 0;
  int percent = 0;      // 0 .. 100
  double factor = 1.0;  // >= 1
};
// "RANK PERCENT FACTOR", e.g. "2 30 4"; none where the text is not three such numbers.
std::optional<StraggleSettings> ParseStraggle(std::string_view text);
// Whether `percent` % of the steps straggle takes `step` (the same answer every time).
bool StragglesAt(int percent, std::int64_t step);

class Straggler {
 public:
  // The straggler of the replica at `rank` where DTRAIN_STRAGGLE names that rank, else null (a
  // malformed value is reported once, on stderr).
  static std::unique_ptr<Straggler> FromEnvironment(int rank);
  explicit Straggler(const StraggleSettings& settings) : settings_(settings) {}

  // Step `step` is about to be computed: sleeps first where it straggles.
  void BeforeStep(std::int64_t step);

 private:
  using Clock = std::chrono::steady_clock;
  StraggleSettings settings_;
  std::optional<Clock::time_point> last_start_;  // the previous step's, its sleep excluded
};

}  // namespace dtrain::runner
