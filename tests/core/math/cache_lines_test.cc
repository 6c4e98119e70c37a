// DropFromCaches loses nothing: values written just before (dirty lines), read by another thread,
// or at unaligned edges of the range read back the same afterwards.
#include <boost/test/unit_test.hpp>

#include <numeric>
#include <thread>
#include <vector>

#include "core/math/cache_lines.h"

namespace dtrain::math {

BOOST_AUTO_TEST_SUITE(cache_lines)

BOOST_AUTO_TEST_CASE(dropped_lines_keep_their_values) {
  std::vector<float> v(10007);
  std::iota(v.begin(), v.end(), 0.5f);
  double seen_by_other = 0.0;
  std::thread([&] { seen_by_other = std::accumulate(v.begin(), v.end(), 0.0); }).join();
  // Unaligned start and end inside the vector, then the whole of it, then nothing.
  DropFromCaches({v.data() + 3, 5000});
  DropFromCaches(v);
  DropFromCaches({});
  for (std::size_t i = 0; i < v.size(); ++i) {
    BOOST_TEST_REQUIRE(v[i] == static_cast<float>(i) + 0.5f);
  }
  BOOST_TEST(std::accumulate(v.begin(), v.end(), 0.0) == seen_by_other);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace dtrain::math
