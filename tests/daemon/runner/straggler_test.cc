// DTRAIN_STRAGGLE's parts that hold on any machine: its value read as "RANK PERCENT FACTOR" (and
// anything else refused), and the steps it slows a pure function of the step, about PERCENT % of
// them. (How long a sleep lasts is the clock's, and not checked.)
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <optional>

#include "daemon/runner/straggler.h"

namespace dtrain::runner {
namespace straggler_test {

BOOST_AUTO_TEST_SUITE(straggler)

BOOST_AUTO_TEST_CASE(reads_rank_percent_and_factor) {
  const std::optional<StraggleSettings> s = ParseStraggle("2 30 4");
  BOOST_REQUIRE(s.has_value());
  BOOST_TEST(s->rank == 2);
  BOOST_TEST(s->percent == 30);
  BOOST_TEST(s->factor == 4.0);
  BOOST_TEST(ParseStraggle(" 0 100 1.5 ").has_value());
}

BOOST_AUTO_TEST_CASE(refuses_anything_else) {
  for (const char* text : {"", "2 30", "2 30 4 5", "x 30 4", "-1 30 4", "2 101 4", "2 -1 4",
                           "2 30 0.5", "2 30 nan", "2 30 4x"}) {
    BOOST_TEST_CONTEXT('"' << text << '"') { BOOST_TEST(!ParseStraggle(text).has_value()); }
  }
}

BOOST_AUTO_TEST_CASE(slows_the_same_steps_about_percent_of_them) {
  constexpr std::int64_t kSteps = 10000;
  for (const int percent : {0, 10, 30, 100}) {
    BOOST_TEST_CONTEXT(percent << " %") {
      std::int64_t slowed = 0;
      for (std::int64_t step = 0; step < kSteps; ++step) {
        const bool slow = StragglesAt(percent, step);
        BOOST_TEST(slow == StragglesAt(percent, step));
        if (slow) ++slowed;
      }
      // A hash's share of 10000 steps: within two points of `percent` (exact at 0 and 100).
      BOOST_TEST(slowed * 100 >= (percent - 2) * kSteps);
      BOOST_TEST(slowed * 100 <= (percent + 2) * kSteps);
      if (percent == 0) BOOST_TEST(slowed == 0);
      if (percent == 100) BOOST_TEST(slowed == kSteps);
    }
  }
}

// A larger share slows every step a smaller one does (the steps are ranked by one hash).
BOOST_AUTO_TEST_CASE(a_larger_share_slows_a_superset) {
  for (std::int64_t step = 0; step < 1000; ++step) {
    if (StragglesAt(10, step)) BOOST_TEST(StragglesAt(30, step));
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace straggler_test
}  // namespace dtrain::runner
