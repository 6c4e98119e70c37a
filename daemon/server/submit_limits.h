// What a daemon's [limits] allow a job it is asked to queue, decided once at submission
// (man/dtraind.8, "Fair share and limits"):
//   - its priority: an ordinary user gives at most max_priority; root, the daemon's own user and
//     the users named in priority_users up to kMaxPriority (MayRaisePriority);
//   - its memory_limit: default_memory_limit when the job sets none, else max_memory_limit (the
//     model must fit it); at most max_memory_limit, or this host's memory when that is 0;
//   - its cores: no more than cores_per_user, or it could never start.
//
//   std::string refused = ApplySubmitLimits(job, cores, MayRaisePriority(uid, name, l), l, mem);
//
// Pure functions.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "config/daemon_config.h"
#include "config/job.h"

namespace dtrain::server {

// Whether the user `uid` (named `name`, empty without an account) may give priorities above
// max_priority. `daemon_uid`: the user the daemon runs as.
bool MayRaisePriority(uid_t uid, const std::string& name, uid_t daemon_uid,
                      const config::DaemonLimits& limits);

// Why the job may not be queued, or empty; fills in the default memory limit. `cores`: what the
// job holds while it runs; `host_memory`: this host's bytes (0: unknown).
std::string ApplySubmitLimits(config::JobConfig& job, int cores, bool may_raise_priority,
                              const config::DaemonLimits& limits, std::uint64_t host_memory);

}  // namespace dtrain::server
