// Doorbell: a waiter sees what was published before Ring whether it was spinning or asleep, and
// a wait without a ring ends at its deadline. The ping-pong test would hang (then fail at its
// deadline) on a lost wake-up.
#include "core/dist/doorbell.h"

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <thread>

#include "ring_harness.h"

namespace dtrain::dist {
namespace doorbell_test {

using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(dist_doorbell)

BOOST_AUTO_TEST_CASE(a_condition_that_holds_returns_at_once) {
  Doorbell bell;
  BOOST_TEST(bell.Wait([] { return true; }, 0us, Clock::now()));
}

BOOST_AUTO_TEST_CASE(without_a_ring_the_wait_ends_at_its_deadline) {
  Doorbell bell;
  const Clock::time_point start = Clock::now();
  BOOST_TEST(!bell.Wait([] { return false; }, 100us, Clock::now() + 50ms));
  BOOST_TEST(testing::SecondsSince(start) < 30.0);
}

BOOST_AUTO_TEST_CASE(a_sleeping_waiter_wakes_when_rung) {
  Doorbell bell;
  std::atomic<bool> ready{false};
  std::thread ringer([&] {
    std::this_thread::sleep_for(50ms);
    ready.store(true, std::memory_order_release);
    bell.Ring();
  });
  const Clock::time_point start = Clock::now();
  BOOST_TEST(
      bell.Wait([&] { return ready.load(std::memory_order_acquire); }, 0us, Clock::now() + 60s));
  ringer.join();
  BOOST_TEST(testing::SecondsSince(start) < 30.0);
}

BOOST_AUTO_TEST_CASE(ping_pong_loses_no_wake_up) {
  for (auto spin : {0us, 20us}) {
    BOOST_TEST_CONTEXT("spin " << spin.count() << " us") {
      Doorbell ping_bell, pong_bell;
      std::atomic<int> ping{0}, pong{0};
      constexpr int kRounds = 20'000;
      const Deadline deadline = Clock::now() + 60s;
      bool pong_ok = true;
      std::thread other([&] {
        for (int i = 1; i <= kRounds && pong_ok; ++i) {
          pong_ok = ping_bell.Wait([&] { return ping.load(std::memory_order_acquire) >= i; }, spin,
                                   deadline);
          pong.store(i, std::memory_order_release);
          pong_bell.Ring();
        }
      });
      bool ping_ok = true;
      const Clock::time_point start = Clock::now();
      for (int i = 1; i <= kRounds && ping_ok; ++i) {
        ping.store(i, std::memory_order_release);
        ping_bell.Ring();
        ping_ok = pong_bell.Wait([&] { return pong.load(std::memory_order_acquire) >= i; }, spin,
                                 deadline);
      }
      other.join();
      BOOST_TEST(ping_ok);
      BOOST_TEST(pong_ok);
      BOOST_TEST(testing::SecondsSince(start) < 30.0);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace doorbell_test
}  // namespace dtrain::dist
