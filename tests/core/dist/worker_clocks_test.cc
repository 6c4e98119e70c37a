// A shard's worker clocks: g is the least clock of the workers present, never decreases (not when
// the slowest leaves, nor when one comes back behind it), and a push's staleness is checked
// against what the shard could have replied and against the bound.
#include "core/dist/worker_clocks.h"

#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

namespace dtrain::dist {
namespace worker_clocks_test {

BOOST_AUTO_TEST_SUITE(worker_clocks)

BOOST_AUTO_TEST_CASE(g_is_the_least_clock_present_and_never_decreases) {
  WorkerClocks clocks(3);
  clocks.Start(std::vector<std::uint64_t>{2, 5, 4});
  BOOST_TEST(clocks.global() == 2u);
  BOOST_TEST(clocks.Behind(4) == "worker rank 0 at clock 2");
  clocks.SetAbsent(0, true);  // its link broke: it no longer holds g back
  BOOST_TEST(clocks.global() == 4u);
  BOOST_TEST(clocks.Behind(5) == "worker rank 2 at clock 4");
  clocks.SetAbsent(0, false);  // back, still at 2: g stays
  BOOST_TEST(clocks.global() == 4u);
  clocks.Advance(0);
  clocks.Advance(2);
  BOOST_TEST(clocks.global() == 4u);
  clocks.SetClock(0, 6);
  BOOST_TEST(clocks.global() == 5u);
  clocks.Depart(0);
  clocks.Depart(1);
  clocks.Depart(2);
  BOOST_TEST(clocks.AllDeparted());
  BOOST_TEST(clocks.global() == 5u);  // with none present, g keeps its value
}

BOOST_AUTO_TEST_CASE(a_push_staleness_is_checked_against_g_and_the_bound) {
  WorkerClocks clocks(2);
  clocks.Start(std::vector<std::uint64_t>{3, 6});
  BOOST_TEST(clocks.Staleness(6, 3, 0).value() == 3u);
  BOOST_TEST(clocks.Staleness(6, 3, 3).value() == 3u);
  const Result<std::uint64_t> too_stale = clocks.Staleness(6, 3, 2);
  BOOST_REQUIRE(!too_stale.ok());
  BOOST_TEST(too_stale.status().message().find("above max_staleness 2") != std::string::npos);
  const Result<std::uint64_t> unreplied = clocks.Staleness(6, 4, 0);  // g is 3
  BOOST_REQUIRE(!unreplied.ok());
  BOOST_TEST(unreplied.status().message().find("the global clock is 3") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace worker_clocks_test
}  // namespace dtrain::dist
