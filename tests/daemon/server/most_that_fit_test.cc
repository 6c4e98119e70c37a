// How many replicas an elastic job starts with, or grows to (daemon/server/placement.h,
// MostThatFit): the most from `most` down to `fewest` that fit, asked largest first.
#include <boost/test/unit_test.hpp>
#include <vector>

#include "daemon/server/placement.h"

namespace dtrain::server {
namespace most_that_fit_test {

BOOST_AUTO_TEST_SUITE(most_that_fit)

BOOST_AUTO_TEST_CASE(the_largest_count_that_fits_is_taken_and_no_smaller_one_is_asked) {
  std::vector<int> asked;
  const int n = MostThatFit(4, 2, [&asked](int k) {
    asked.push_back(k);
    return k <= 3;  // three replicas' cores are free
  });
  BOOST_TEST(n == 3);
  BOOST_TEST(asked == std::vector<int>({4, 3}));
}

BOOST_AUTO_TEST_CASE(none_fits_at_or_above_the_fewest) {
  std::vector<int> asked;
  const int n = MostThatFit(3, 2, [&asked](int k) {
    asked.push_back(k);
    return k <= 1;
  });
  BOOST_TEST(n == 0);
  BOOST_TEST(asked == std::vector<int>({3, 2}));  // one replica is below min_workers
  BOOST_TEST(MostThatFit(0, 1, [](int) { return true; }) == 0);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace most_that_fit_test
}  // namespace dtrain::server
