// Which ended jobs `prune` removes, and how a removed job is shown (`dtrain rm`, `dtrain prune`,
// the daemon's `rm` and `prune` replies alike).
//
//   PruneFilter f{now - 30 * 86400, {JobState::kFailed}, caller_uid};
//   for (const JobRecord& j : store.ListJobs().value()) if (Prunable(j, f)) store.DeleteJob(j.id);
//
// Invariant: only an ended job (succeeded, failed, cancelled) is ever prunable. Pure functions:
// safe for concurrent use.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "daemon/store/records.h"

namespace dtrain::store {

struct PruneFilter {
  double before = 0;             // last changed (its `updated` time) before this Unix time
  std::vector<JobState> states;  // ended states only; empty: every ended state
  std::optional<std::int64_t> owner;  // only this uid's jobs; nullopt: everyone's (root)
};

bool Prunable(const JobRecord& job, const PruneFilter& filter);

// A state a job may be pruned in, by name; an error listing them for any other.
Result<JobState> ParseEndedState(std::string_view name);

// {"id", "name", "state", "owner", "updated"}.
nlohmann::json RemovedJobJson(const JobRecord& job);

}  // namespace dtrain::store
