// The scheduler's order among queued jobs and each user's share of the host: the one place that
// decides which waiting job starts next (man/dtraind.8, "Fair share and limits").
//
//   1. a higher priority first (users give at most [limits] max_priority: submit_limits.h);
//   2. among equal priorities, the job of the user who holds the fewest cores right now (their
//      running jobs'), then the one with the fewest running jobs: the user using the least;
//   3. then the order submitted.
//
// A job whose owner is at [limits] jobs_per_user or cores_per_user waits without holding back the
// jobs behind it (they may be other users'); a job waiting for the host's slots or cores does hold
// them back, so a large job is not starved by smaller ones behind it.
//
//   UsageByUser usage = {{1001, {1, 4}}};          // uid 1001 runs one job on 4 cores
//   bool first = StartsBefore(a, b, usage);
//   std::string why = OverUserShare(1001, 2, usage, limits);   // empty: may start
//
// Pure functions.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>

#include "config/daemon_config.h"

namespace dtrain::server {

// What one user's running jobs hold.
struct Held {
  int jobs = 0;
  int cores = 0;
};
using UsageByUser = std::map<uid_t, Held>;

// A queued job as the rule sees it.
struct QueuedJob {
  std::int64_t id = 0;
  int priority = 0;
  uid_t owner = 0;
};

// Whether `a` starts before `b` while users hold `usage`.
bool StartsBefore(const QueuedJob& a, const QueuedJob& b, const UsageByUser& usage);

// Why `owner` may not start a job of `cores` cores now ("waiting: uid 1001 runs 2 jobs,
// [limits] jobs_per_user = 2"), or empty when the user's share allows it.
std::string OverUserShare(uid_t owner, int cores, const UsageByUser& usage,
                          const config::DaemonLimits& limits);

}  // namespace dtrain::server
