// TrialStandingCache: what ReadStandings (sweep_standing.h) read of a sweep's trials, kept so
// that a sweep's page, streamed every second, `dtrain sweep status` and the sweep driver's passes
// read again only the trials whose jobs changed or still run. An entry holds what was read of a
// trial's job at one `updated` time of its row (jobs.updated), and is used only while the row
// still has that time: a job moves it with every change of its state, reason or file (an ASHA
// promotion re-queues the job with a new file), and an ended job's metrics and checkpoints no
// longer change. An ended trial's whole standing is kept; a running one's train.steps, so that
// no read parses its job file again.
//
//   TrialStandingCache cache;              // the daemon's (SweepDriver), shared by every reader
//   ReadStandings(store, sweep, loaded, rows, &cache);
//
// Bounded: at most kSweeps sweeps (the least recently read dropped first), each with an entry per
// trial row read last (at most config::kMaxSweepTrials). Thread-safe: ReadStandings runs on the
// pool's threads, several at a time; two readers of one sweep each keep a correct set, the last
// one's stays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "daemon/server/sweep_standing.h"

namespace dtrain::server {

// What was read of a trial's job at one `updated` time.
struct CachedStanding {
  double updated = 0;                  // the job row's `updated` time it was read at
  std::int64_t target = 0;             // ASHA: the train.steps its job file named then
  std::optional<TrialStanding> ended;  // the standing, once the job had ended
};

class TrialStandingCache {
 public:
  static constexpr std::size_t kSweeps = 16;
  using Entries = std::map<std::int64_t, CachedStanding>;  // by job id

  // The sweep's entries as last kept; empty when none are.
  std::shared_ptr<const Entries> Find(std::int64_t sweep);
  // Replaces the sweep's entries, the sweep now the most recently read.
  void Keep(std::int64_t sweep, Entries entries);

 private:
  std::mutex mu_;
  std::uint64_t reads_ = 0;  // guarded by mu_: a clock of Keep calls
  // guarded by mu_: sweep -> (the reads_ when kept, its entries)
  std::map<std::int64_t, std::pair<std::uint64_t, std::shared_ptr<const Entries>>> sweeps_;
};

}  // namespace dtrain::server
