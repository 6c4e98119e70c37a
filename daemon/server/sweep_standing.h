// Where each trial of a daemon's sweep stands, read from the store alone, and what the sweep does
// next from that: the facts the sweep driver decides from and `sweep_status` shows
// (control_protocol.md's TRIAL).
//
//   Result<std::vector<TrialStanding>> s = ReadStandings(store, sweep, loaded.get(), rows, &cache);
//   config::AshaAction next = NextSweepAction(*loaded->sweep, sweep.trials, s.value());
//
// An ASHA trial's rung is never stored: it follows from its job's row. A job trains to the rung
// its train.steps names (a new trial's job to rung 0); it completed every rung below that one,
// and that one too once it succeeded at exactly train.steps. A promotion changes train.steps and
// queues the job again in one store transaction (Store::RequeueJob), so a daemon killed at any
// moment leaves the trial either at its rung, succeeded and still promotable, or queued toward
// the next: a promotion happens at most once and is never lost.
//
// ReadStandings reads each trial's job once it has ended and again only when its row changes
// (TrialStandingCache, standing_cache.h). It blocks on SQLite: call it off the event loop.
// NextSweepAction is pure.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config/sweep_asha.h"
#include "config/sweep_file.h"
#include "daemon/store/store.h"

namespace dtrain::server {

class TrialStandingCache;

struct TrialStanding {
  std::int64_t trial = 0;
  std::optional<std::int64_t> job;  // nullopt: the trial's job was removed
  bool running = false;             // its job has not ended (queued, running, recovering)
  std::string state;                // its job's state name, or "removed"
  std::string reason;               // its job's reason
  std::int64_t steps = 0;           // its job's step (store::FurthestStep)
  std::optional<double> metric;     // the sweep's metric: its last value (ASHA: at its rung)
  int rung = -1;                    // ASHA: the highest rung it completed; else -1
  config::AshaTrial asha;           // ASHA: what config::NextAshaAction takes of it
};

// The lead process (config::LeadRank) of trial `trial`'s job: the one whose metrics rank it; 0
// when `loaded` (the trials as the sweep file draws them) is null or lacks the trial.
int TrialLeadRank(const config::SweepLoadResult* loaded, std::int64_t trial);

// The standing of every trial of `sweep` with a row (`rows`, by trial index, as
// Store::SweepTrials reads them). `loaded`: the sweep's trials as its file generates them (their
// lead ranks and, for ASHA, the rungs); null when the file no longer loads (rank 0, no rungs).
// `cache`: what earlier reads of the sweep kept, used and updated (null, or without `loaded`:
// every trial read from the store). An error when the store cannot be read.
Result<std::vector<TrialStanding>> ReadStandings(store::Store& store,
                                                 const store::SweepRecord& sweep,
                                                 const config::SweepLoadResult* loaded,
                                                 const std::vector<store::SweepTrialRecord>& rows,
                                                 TrialStandingCache* cache);

// What a sweep of `trials` trials does next, for every method: ASHA's config::NextAshaAction
// over the standings' facts; grid and random start the lowest trial without a row, then wait
// while a trial runs, then are done. `standings` by trial index, one per row.
config::AshaAction NextSweepAction(const config::SweepSpec& spec, std::int64_t trials,
                                   std::span<const TrialStanding> standings);

}  // namespace dtrain::server
