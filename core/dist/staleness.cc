#include "core/dist/staleness.h"

#include <algorithm>
#include <cmath>

namespace dtrain::dist {

void StalenessStats::Record(std::uint64_t staleness, std::uint64_t count) {
  if (count == 0) return;
  if (histogram.size() <= staleness) histogram.resize(staleness + 1, 0);
  histogram[staleness] += count;
  pushes += count;
  mean += (static_cast<double>(staleness) - mean) * static_cast<double>(count) /
          static_cast<double>(pushes);
  max = std::max(max, staleness);
}

std::uint64_t StalenessStats::Percentile(double q) const {
  if (pushes == 0) return 0;
  const double want = std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(pushes));
  std::uint64_t seen = 0;
  for (std::size_t s = 0; s < histogram.size(); ++s) {
    seen += histogram[s];
    if (static_cast<double>(seen) >= want && seen > 0) return s;
  }
  return histogram.size() - 1;
}

}  // namespace dtrain::dist
