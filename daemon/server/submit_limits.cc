#include "daemon/server/submit_limits.h"

#include <algorithm>

#include "config/job_memory.h"

namespace dtrain::server {

bool MayRaisePriority(uid_t uid, const std::string& name, uid_t daemon_uid,
                      const config::DaemonLimits& limits) {
  if (uid == 0 || uid == daemon_uid) return true;
  return !name.empty() && std::find(limits.priority_users.begin(), limits.priority_users.end(),
                                    name) != limits.priority_users.end();
}

std::string ApplySubmitLimits(config::JobConfig& job, int cores, bool may_raise_priority,
                              const config::DaemonLimits& limits, std::uint64_t host_memory) {
  const int top = may_raise_priority ? config::kMaxPriority : limits.max_priority;
  if (job.priority > top) {
    return "priority " + std::to_string(job.priority) + " is above the " + std::to_string(top) +
           " this user may give ([limits] max_priority; root and the users in priority_users "
           "may give up to " +
           std::to_string(config::kMaxPriority) + ")";
  }
  if (limits.cores_per_user > 0 && cores > limits.cores_per_user) {
    return "the job needs " + std::to_string(cores) + " cores, more than one user may hold " +
           "([limits] cores_per_user = " + std::to_string(limits.cores_per_user) +
           "): it could never start";
  }
  const std::uint64_t most = limits.max_memory_limit > 0 ? limits.max_memory_limit : host_memory;
  if (most > 0 && job.memory_limit > most) {
    return "[train] memory_limit is " + config::FormatBytes(job.memory_limit) + ", more than " +
           (limits.max_memory_limit > 0 ? "this daemon allows ([limits] max_memory_limit = " +
                                              config::FormatBytes(most) + ")"
                                        : "this host's " + config::FormatBytes(most) + " of memory");
  }
  // A job that sets none gets the default, or else the configured maximum, which bounds all.
  const std::uint64_t fallback =
      limits.default_memory_limit > 0 ? limits.default_memory_limit : limits.max_memory_limit;
  if (job.memory_limit == 0 && fallback > 0) {
    const config::JobMemory m = config::EstimateJobMemory(job);
    const std::uint64_t needs =
        std::max(m.replica, m.shard) + config::ProcessOverhead(std::max(job.threads, 1));
    if (needs > fallback) {
      return "each process needs at least " + config::FormatBytes(needs) +
             ", more than the memory limit this daemon gives jobs that set none (" +
             config::FormatBytes(fallback) + ", [limits] " +
             (limits.default_memory_limit > 0 ? "default_memory_limit" : "max_memory_limit") +
             "): set [train] memory_limit";
    }
    job.memory_limit = fallback;
  }
  return "";
}

}  // namespace dtrain::server
