// ResidualDeposits (residual_deposits.h): a sync shard's collection of its workers' residual
// slices for one checkpoint — every worker's slice kept rank by rank, only for the step being
// collected, once per worker, of the range's size; anything else refused, naming the worker.
#include "core/dist/residual_deposits.h"

#include <boost/test/unit_test.hpp>
#include <vector>

namespace dtrain::dist {
namespace residual_deposits_test {

BOOST_AUTO_TEST_SUITE(dist_residual_deposits)

BOOST_AUTO_TEST_CASE(every_workers_slice_comes_back_rank_by_rank_once_all_have_come) {
  ResidualDeposits deposits(3, 2);
  deposits.Begin(7);
  BOOST_TEST(deposits.collecting());
  BOOST_TEST(deposits.step() == 7u);
  // In any order: the slices come back by rank.
  BOOST_TEST(deposits.Deposit(2, 7, std::vector<float>{5.0f, 6.0f}).ok());
  BOOST_TEST(deposits.Deposit(0, 7, std::vector<float>{1.0f, 2.0f}).ok());
  BOOST_TEST(!deposits.Complete());
  BOOST_TEST(deposits.Deposit(1, 7, std::vector<float>{3.0f, 4.0f}).ok());
  BOOST_TEST(deposits.Complete());
  const std::vector<std::span<const float>> slices = deposits.Slices();
  BOOST_REQUIRE_EQUAL(slices.size(), 3u);
  for (std::size_t r = 0; r < 3; ++r) {
    const std::vector<float> want = {2.0f * r + 1.0f, 2.0f * r + 2.0f};
    BOOST_TEST(std::vector<float>(slices[r].begin(), slices[r].end()) == want,
               boost::test_tools::per_element());
  }
  deposits.Clear();
  BOOST_TEST(!deposits.collecting());
  BOOST_TEST(!deposits.Complete());
  BOOST_TEST(deposits.Slices().empty());
}

BOOST_AUTO_TEST_CASE(a_slice_for_another_step_or_when_none_is_collected_is_refused) {
  ResidualDeposits deposits(2, 1);
  const std::vector<float> slice = {1.0f};
  BOOST_TEST(deposits.Deposit(0, 3, slice).message() ==
             "worker rank 0 sent its residual for the checkpoint before step 3, but the shard "
             "collects none");
  deposits.Begin(4);
  BOOST_TEST(deposits.Deposit(1, 3, slice).message() ==
             "worker rank 1 sent its residual for the checkpoint before step 3, but the shard "
             "collects those of step 4");
  // A new collection forgets the old one's slices.
  BOOST_TEST(deposits.Deposit(0, 4, slice).ok());
  deposits.Begin(5);
  BOOST_TEST(deposits.Deposit(1, 5, slice).ok());
  BOOST_TEST(!deposits.Complete());
}

BOOST_AUTO_TEST_CASE(a_second_slice_a_slice_of_another_size_or_an_unknown_rank_is_refused) {
  ResidualDeposits deposits(2, 3);
  deposits.Begin(1);
  const std::vector<float> three = {1.0f, 2.0f, 3.0f};
  BOOST_TEST(deposits.Deposit(0, 1, std::vector<float>{1.0f, 2.0f}).message() ==
             "worker rank 0 sent a residual of 2 floats for the shard's range of 3");
  BOOST_TEST(deposits.Deposit(0, 1, three).ok());
  BOOST_TEST(deposits.Deposit(0, 1, std::vector<float>{9.0f, 9.0f, 9.0f}).message() ==
             "worker rank 0 sent its residual for step 1 twice");
  BOOST_TEST(deposits.Deposit(2, 1, three).message() ==
             "worker rank 2 sent a residual, but the shard serves 2 workers");
  BOOST_TEST(deposits.Deposit(-1, 1, three).message() ==
             "worker rank -1 sent a residual, but the shard serves 2 workers");
  BOOST_TEST(!deposits.Complete());
  // What was refused left nothing behind.
  BOOST_TEST(deposits.Deposit(1, 1, three).ok());
  BOOST_REQUIRE(deposits.Complete());
  const std::span<const float> first = deposits.Slices()[0];
  BOOST_TEST(std::vector<float>(first.begin(), first.end()) == three,
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace residual_deposits_test
}  // namespace dtrain::dist
