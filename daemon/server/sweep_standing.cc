#include "daemon/server/sweep_standing.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "config/job_file.h"
#include "config/job_layout.h"
#include "daemon/server/standing_cache.h"
#include "daemon/store/job_views.h"

namespace dtrain::server {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The train.steps of the job's file (the rung it trains to); 0 when the file does not parse.
std::int64_t TargetSteps(const store::JobRecord& job) {
  const config::LoadResult parsed = config::ParseJobText(
      job.spec_toml, "job " + std::to_string(job.id), {}, "/", {config::DataFiles::kUnchecked});
  return parsed.ok() ? parsed.job->train.steps : 0;
}

// The standing of the trial of `row` from its job's rows. `cached`: what was read of its job
// before (null: nothing); `keep`: its `updated` and target set to those read now (`updated` left
// 0 when the job is gone).
Result<TrialStanding> ReadStanding(store::Store& store, const store::SweepTrialRecord& row,
                                   const std::string& metric, int lead_rank,
                                   const std::vector<std::int64_t>& rungs,
                                   const CachedStanding* cached, CachedStanding& keep) {
  TrialStanding s;
  s.trial = row.trial;
  s.job = row.job;
  s.state = "removed";
  s.asha.ended = true;
  if (!row.job) return s;
  if (cached != nullptr && cached->updated == row.job_updated && cached->ended) {
    keep = *cached;
    return *cached->ended;  // ended, and its row unchanged since
  }
  const std::int64_t id = *row.job;
  Result<store::JobRecord> job = store.GetJob(id);
  if (!job.ok()) {
    s.job.reset();  // removed after its row was read
    return s;
  }
  Result<std::vector<store::MetricRow>> latest = store.LatestMetrics(id);
  if (!latest.ok()) return latest.status();
  Result<std::vector<store::CheckpointInfo>> checkpoints = store.Checkpoints(id);
  if (!checkpoints.ok()) return checkpoints.status();
  Result<std::vector<store::MetricRow>> values = store.Metrics(id, metric);
  if (!values.ok()) return values.status();
  const store::JobState state = job.value().state;
  s.state = store::JobStateName(state);
  s.reason = job.value().reason;
  s.running = !store::IsTerminal(state);
  s.steps = store::FurthestStep(latest.value(), checkpoints.value());
  s.metric =
      store::FinalMetric(values.value(), lead_rank, std::numeric_limits<std::int64_t>::max());
  keep.updated = job.value().updated;
  if (rungs.empty()) return s;

  // ASHA: the rungs below the one its train.steps names, and that one once it succeeded there.
  keep.target = cached != nullptr && cached->updated == keep.updated ? cached->target
                                                                     : TargetSteps(job.value());
  const std::int64_t target = keep.target;
  const bool succeeded = state == store::JobState::kSucceeded;
  for (const std::int64_t steps : rungs) {
    if (steps > s.steps || steps > target || (steps == target && !succeeded)) break;
    s.asha.metrics.push_back(store::FinalMetric(values.value(), lead_rank, steps).value_or(kNaN));
  }
  s.rung = static_cast<int>(s.asha.metrics.size()) - 1;
  s.asha.running = s.running;
  // At its rung (promotable) only when it trained exactly to it; stopped early, failed or
  // cancelled, it trains no further.
  s.asha.ended =
      !s.running && !(succeeded && s.rung >= 0 &&
                      rungs[static_cast<std::size_t>(s.rung)] == target && s.steps == target);
  if (s.rung >= 0 && !std::isnan(s.asha.metrics.back())) s.metric = s.asha.metrics.back();
  return s;
}

}  // namespace

Result<std::vector<TrialStanding>> ReadStandings(store::Store& store,
                                                 const store::SweepRecord& sweep,
                                                 const config::SweepLoadResult* loaded,
                                                 const std::vector<store::SweepTrialRecord>& rows,
                                                 TrialStandingCache* cache) {
  std::vector<std::int64_t> rungs;
  if (loaded != nullptr && loaded->sweep->method == config::SweepMethod::kAsha) {
    rungs = config::AshaRungs(loaded->sweep->asha);
  }
  // Only with the sweep's file: without it the lead ranks and rungs differ.
  if (loaded == nullptr) cache = nullptr;
  const std::shared_ptr<const TrialStandingCache::Entries> cached =
      cache != nullptr ? cache->Find(sweep.id) : nullptr;
  TrialStandingCache::Entries kept;  // the trials read now only
  std::vector<TrialStanding> standings;
  for (const store::SweepTrialRecord& row : rows) {
    const CachedStanding* before = nullptr;
    if (cached != nullptr && row.job) {
      if (const auto it = cached->find(*row.job); it != cached->end()) before = &it->second;
    }
    CachedStanding now;
    Result<TrialStanding> s = ReadStanding(store, row, sweep.metric,
                                           TrialLeadRank(loaded, row.trial), rungs, before, now);
    if (!s.ok()) return s.status();
    if (now.updated != 0) {
      if (!s.value().running) now.ended = s.value();
      kept[*row.job] = std::move(now);
    }
    standings.push_back(std::move(s).value());
  }
  if (cache != nullptr) cache->Keep(sweep.id, std::move(kept));
  return standings;
}

int TrialLeadRank(const config::SweepLoadResult* loaded, std::int64_t trial) {
  if (loaded == nullptr || trial < 0 || trial >= static_cast<std::int64_t>(loaded->trials.size())) {
    return 0;
  }
  return config::LeadRank(loaded->trials[static_cast<std::size_t>(trial)].job.cluster);
}

config::AshaAction NextSweepAction(const config::SweepSpec& spec, std::int64_t trials,
                                   std::span<const TrialStanding> standings) {
  using Kind = config::AshaAction::Kind;
  if (spec.method == config::SweepMethod::kAsha) {
    std::vector<config::AshaTrial> facts;
    for (const TrialStanding& s : standings) facts.push_back(s.asha);
    return config::NextAshaAction(spec.asha, spec.goal, trials, facts);
  }
  // Grid and random trials do not depend on each other: the lowest index without a row.
  std::int64_t next = 0;
  for (const TrialStanding& s : standings) {
    if (s.trial != next) break;
    ++next;
  }
  if (next < trials) return {Kind::kStart, next, -1, 0};
  const bool running = std::any_of(standings.begin(), standings.end(),
                                   [](const TrialStanding& s) { return s.running; });
  return {running ? Kind::kWait : Kind::kDone, -1, -1, 0};
}

}  // namespace dtrain::server
