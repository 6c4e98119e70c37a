// ASHA, asynchronous successive halving (Li et al., MLSys 2020), as one pure decision: given
// where every trial of a sweep stands, what to do next. No I/O and no clock, so `dtrain sweep
// run` (trials one after another) and a daemon's sweep driver (rows of its store, several
// trials at once) take the same decisions from the same facts.
//
//   std::vector<AshaTrial> trials = ...;  // trial i at index i, as recorded
//   AshaAction next = NextAshaAction(sweep.asha, sweep.goal, sweep.max_trials, trials);
//   switch (next.kind) { case AshaAction::Kind::kPromote: resume next.trial to next.steps; ... }
//
// Grid and random sweeps take their decisions as the same AshaAction (kStart, kWait, kDone), so
// that the daemon drives every method through one path (daemon/server/sweep_driver.h).
//
// Rules (documented in dtrain-sweep.toml(5)):
// - Rungs: r_k = min_steps * reduction_factor^k for every such value below max_steps, then
//   max_steps itself, the last rung (min 100, max 1000, factor 3: 100, 300, 900, 1000).
// - A trial completed rung k when its metric at step r_k is known; it is promotable from rung k
//   when rung k is the highest it completed, it is neither running nor ended, its metric there is
//   a number (never NaN), and it ranks among the top floor(n_k / reduction_factor) of the n_k
//   trials that completed rung k. Ranking: config::Better under the goal (a NaN last), equal
//   values by trial index. Trials promoted earlier keep their places in that count (a trial is
//   promoted at most once from each rung).
// - Next: the highest rung with a promotable trial promotes its best-ranked one; else a new
//   trial starts while fewer than max_trials have; else wait while a trial runs; else done.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/sweep_file.h"

namespace dtrain::config {

// The rungs' steps, ascending; the last is options.max_steps (> min_steps >= 1).
std::vector<std::int64_t> AshaRungs(const AshaOptions& options);

// Where one trial stands.
struct AshaTrial {
  // The sweep's metric at each rung the trial completed, rung 0 first (NaN: none recorded).
  std::vector<double> metrics;
  bool running = false;  // training toward rung metrics.size()
  bool ended = false;    // trains no further: it failed, or stopped before its rung's step
};

struct AshaAction {
  enum class Kind { kPromote, kStart, kWait, kDone };
  Kind kind = Kind::kDone;
  std::int64_t trial = -1;  // kPromote: the trial; kStart: the new one's index (trials.size())
  int rung = -1;            // kPromote, kStart: the rung it trains to
  std::int64_t steps = 0;   // kPromote, kStart: that rung's steps (train.steps)

  bool operator==(const AshaAction&) const = default;
};

// The overrides that make a trial's job train to a rung: train.steps = `steps`, train.epochs =
// 0 (the rung alone bounds it). A new trial's job is the base job with its values and the first
// rung's; a promotion resumes it with the next rung's (both keys may change on resume).
std::vector<std::string> AshaRungOverrides(std::int64_t steps);

// The job keys ASHA sets itself, which a sweep parameter may not vary.
inline constexpr std::string_view kAshaKeys[] = {"train.steps", "train.epochs"};

// What to do next, by the rules above. `trials[i]` is trial i; `max_trials` >= 1.
AshaAction NextAshaAction(const AshaOptions& options, SweepGoal goal, std::int64_t max_trials,
                          std::span<const AshaTrial> trials);

// The reasons a trial's job shows (dtrain-sweep.toml(5)), the same from `dtrain sweep run` and
// the daemon: it ended at rung `rung` (of `steps` steps) below the last and may be promoted; it
// was promoted to rung `rung`; the sweep ended with it still paused at rung `rung`.
std::string AshaPausedReason(int rung, std::int64_t steps);
std::string AshaPromotedReason(int rung, std::int64_t steps);
std::string AshaStoppedReason(const AshaOptions& options, int rung);

// A trial's place on a sweep's leaderboard: the highest ASHA rung it completed (-1: none, or not
// an ASHA sweep) and the sweep's metric there (its last value for grid and random).
struct TrialScore {
  int rung = -1;
  std::optional<double> metric;
};

// Whether a trial scored `a` ranks before one scored `b`: one with a metric before one without,
// then the higher rung (ASHA: a metric at a higher rung was trained longer, so the best trial is
// the best of the highest rung reached), then the better metric under `goal` (a NaN last). Not
// strict for equals: a stable sort keeps them in trial order.
bool RanksBefore(SweepGoal goal, const TrialScore& a, const TrialScore& b);

}  // namespace dtrain::config
