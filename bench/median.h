// The median of a benchmark's samples: the figure every bench prints, robust to the outliers a
// shared machine produces. Of an even count, the upper of the two middle samples. Not empty.
#pragma once

#include <algorithm>
#include <vector>

namespace dtrain::bench {

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace dtrain::bench
