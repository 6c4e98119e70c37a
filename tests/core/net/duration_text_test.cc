// Ms (core/duration_text.h), how timeouts read in messages: whole milliseconds, rounded up, so
// that a message never claims less time than was waited.
#include "core/duration_text.h"

#include <boost/test/unit_test.hpp>
#include <chrono>

namespace dtrain {
namespace duration_text_test {

using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(duration_text)

BOOST_AUTO_TEST_CASE(whole_milliseconds_read_as_they_are) {
  BOOST_TEST(Ms(0ms) == "0 ms");
  BOOST_TEST(Ms(250ms) == "250 ms");
  BOOST_TEST(Ms(5s) == "5000 ms");
}

BOOST_AUTO_TEST_CASE(a_part_of_a_millisecond_rounds_up) {
  BOOST_TEST(Ms(1500us) == "2 ms");
  BOOST_TEST(Ms(1ns) == "1 ms");
  BOOST_TEST(Ms(std::chrono::steady_clock::duration(3ms)) == "3 ms");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace duration_text_test
}  // namespace dtrain
