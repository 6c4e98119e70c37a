#include "daemon/server/fair_share.h"

#include <tuple>

namespace dtrain::server {
namespace {

Held HeldBy(uid_t owner, const UsageByUser& usage) {
  const auto it = usage.find(owner);
  return it == usage.end() ? Held{} : it->second;
}

}  // namespace

bool StartsBefore(const QueuedJob& a, const QueuedJob& b, const UsageByUser& usage) {
  const Held ha = HeldBy(a.owner, usage), hb = HeldBy(b.owner, usage);
  return std::make_tuple(-a.priority, ha.cores, ha.jobs, a.id) <
         std::make_tuple(-b.priority, hb.cores, hb.jobs, b.id);
}

std::string OverUserShare(uid_t owner, int cores, const UsageByUser& usage,
                          const config::DaemonLimits& limits) {
  const Held held = HeldBy(owner, usage);
  const std::string who = "uid " + std::to_string(owner);
  if (limits.jobs_per_user > 0 && held.jobs >= limits.jobs_per_user) {
    return "waiting: " + who + " runs " + std::to_string(held.jobs) + " job" +
           (held.jobs == 1 ? "" : "s") + " ([limits] jobs_per_user = " +
           std::to_string(limits.jobs_per_user) + ")";
  }
  if (limits.cores_per_user > 0 && held.cores + cores > limits.cores_per_user) {
    return "waiting: " + who + "'s jobs hold " + std::to_string(held.cores) + " cores and this one needs " +
           std::to_string(cores) + " ([limits] cores_per_user = " +
           std::to_string(limits.cores_per_user) + ")";
  }
  return "";
}

}  // namespace dtrain::server
