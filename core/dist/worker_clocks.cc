#include "core/dist/worker_clocks.h"

#include <algorithm>
#include <optional>

namespace dtrain::dist {

WorkerClocks::WorkerClocks(std::size_t workers)
    : clocks_(workers, 0), departed_(workers, false), absent_(workers, false) {}

void WorkerClocks::Start(std::span<const std::uint64_t> clocks) {
  clocks_.assign(clocks.begin(), clocks.end());
  departed_.assign(clocks_.size(), false);
  absent_.assign(clocks_.size(), false);
  global_ = 0;
  Recompute();
}

bool WorkerClocks::AllDeparted() const {
  return std::all_of(departed_.begin(), departed_.end(), [](bool d) { return d; });
}

void WorkerClocks::SetClock(std::size_t w, std::uint64_t clock) {
  clocks_[w] = clock;
  Recompute();
}

void WorkerClocks::Depart(std::size_t w) {
  departed_[w] = true;
  Recompute();
}

void WorkerClocks::SetAbsent(std::size_t w, bool absent) {
  absent_[w] = absent;
  Recompute();
}

void WorkerClocks::Recompute() {
  std::optional<std::uint64_t> g;
  for (std::size_t w = 0; w < clocks_.size(); ++w) {
    if (!departed_[w] && !absent_[w]) g = std::min(g.value_or(clocks_[w]), clocks_[w]);
  }
  if (g && *g > global_) global_ = *g;
}

Result<std::uint64_t> WorkerClocks::Staleness(std::uint64_t clock, std::uint64_t basis,
                                              int max_staleness) const {
  if (basis > global_ || basis > clock) {
    return Status::Error("a push at clock " + std::to_string(clock) +
                         " computed from global clock " + std::to_string(basis) +
                         ", but the global clock is " + std::to_string(global_));
  }
  const std::uint64_t staleness = clock - basis;
  if (max_staleness > 0 && staleness > static_cast<std::uint64_t>(max_staleness)) {
    return Status::Error("a push at clock " + std::to_string(clock) + " of staleness " +
                         std::to_string(staleness) + " (computed from global clock " +
                         std::to_string(basis) + "), above max_staleness " +
                         std::to_string(max_staleness));
  }
  return staleness;
}

std::string WorkerClocks::Behind(std::uint64_t need) const {
  std::string behind;
  for (std::size_t w = 0; w < clocks_.size(); ++w) {
    if (!departed_[w] && !absent_[w] && clocks_[w] < need) {
      behind += (behind.empty() ? "" : ", ") + ("worker rank " + std::to_string(w)) + " at clock " +
                std::to_string(clocks_[w]);
    }
  }
  return behind;
}

}  // namespace dtrain::dist
