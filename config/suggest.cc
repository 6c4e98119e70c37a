#include "config/suggest.h"

#include <algorithm>
#include <vector>

namespace dtrain::config {
namespace {

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

std::size_t EditDistance(std::string_view a, std::string_view b) {
  // Three rows of the dynamic-programming table: i - 2, i - 1 and i.
  const std::size_t m = b.size();
  std::vector<std::size_t> before(m + 1), previous(m + 1), current(m + 1);
  for (std::size_t j = 0; j <= m; ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const bool same = Lower(a[i - 1]) == Lower(b[j - 1]);
      current[j] =
          std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (same ? 0 : 1)});
      if (i > 1 && j > 1 && Lower(a[i - 1]) == Lower(b[j - 2]) &&
          Lower(a[i - 2]) == Lower(b[j - 1])) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[m];
}

std::string_view ClosestName(std::string_view typed, std::span<const std::string_view> candidates) {
  const std::size_t limit = std::min<std::size_t>(3, 1 + typed.size() / 4);
  std::string_view best;
  std::size_t best_distance = limit + 1;
  for (std::string_view candidate : candidates) {
    const std::size_t d = EditDistance(typed, candidate);
    if (d < best_distance && d < typed.size()) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace dtrain::config
