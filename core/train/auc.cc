#include "core/train/auc.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace dtrain::train {

double Auc(std::span<const float> scores, std::span<const float> labels) {
  assert(scores.size() == labels.size());
  // A NaN score ranks nowhere (and would break the sort's ordering): the area is undefined.
  if (std::ranges::any_of(scores, [](float s) { return std::isnan(s); })) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  std::vector<std::size_t> order(scores.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return scores[a] < scores[b]; });
  // Mann-Whitney U: the positives' ranks (1-based, ties averaged) minus their least possible sum.
  double positive_ranks = 0.0;
  double positives = 0.0;
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j < order.size() && scores[order[j]] == scores[order[i]]) ++j;
    const double rank = 0.5 * static_cast<double>(i + 1 + j);  // the mean of ranks i+1 .. j
    for (std::size_t k = i; k < j; ++k) {
      if (labels[order[k]] > 0.5f) {
        positive_ranks += rank;
        positives += 1.0;
      }
    }
    i = j;
  }
  const double negatives = static_cast<double>(scores.size()) - positives;
  if (positives == 0.0 || negatives == 0.0) return std::numeric_limits<double>::quiet_NaN();
  return (positive_ranks - positives * (positives + 1.0) / 2.0) / (positives * negatives);
}

}  // namespace dtrain::train
