#include "daemon/server/standing_cache.h"

#include <algorithm>

namespace dtrain::server {

std::shared_ptr<const TrialStandingCache::Entries> TrialStandingCache::Find(std::int64_t sweep) {
  static const auto kNone = std::make_shared<const Entries>();
  const std::lock_guard lock(mu_);
  const auto it = sweeps_.find(sweep);
  return it == sweeps_.end() ? kNone : it->second.second;
}

void TrialStandingCache::Keep(std::int64_t sweep, Entries entries) {
  auto kept = std::make_shared<const Entries>(std::move(entries));
  const std::lock_guard lock(mu_);
  sweeps_[sweep] = {++reads_, std::move(kept)};
  if (sweeps_.size() <= kSweeps) return;
  const auto oldest = std::min_element(
      sweeps_.begin(), sweeps_.end(),
      [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
  sweeps_.erase(oldest);
}

}  // namespace dtrain::server
