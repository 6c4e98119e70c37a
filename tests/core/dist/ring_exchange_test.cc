// Two-rank all-reduce by direct exchange, and how ops are driven (RingOptions::caller_sends): the
// exchange must give both ranks the same bits, equal to the two-phase ring's, for every size; a
// calling thread whose send blocks must be rescued by its sender thread (no deadlock), after which
// the ring drives its next ops threaded; and a rank may drive its op either way whatever its peer
// does, since the messages are the same.
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <vector>

#include "core/dist/ring_allreduce.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace ring_exchange_test {

using namespace std::chrono_literals;
using testing::Ring;
using testing::Transport;

// Every rank reduces Input(rank, size, input) with tag `op` (a mean when `mean`); what each ended
// with.
std::vector<std::vector<float>> Reduce(Ring& ring, std::size_t size, std::uint32_t op,
                                       bool mean = false, std::uint32_t input = 0) {
  std::vector<std::vector<float>> data(static_cast<std::size_t>(ring.world()));
  const std::vector<Status> status = testing::RunRanks(ring.world(), [&](int r) {
    std::vector<float>& mine = data[static_cast<std::size_t>(r)];
    mine = testing::Input(r, size, input == 0 ? op : input);
    RingAllReduce& rank = *ring.ranks[static_cast<std::size_t>(r)];
    return mean ? rank.AllReduceMean(mine, op) : rank.AllReduceSum(mine, op);
  });
  for (const Status& s : status) BOOST_TEST_REQUIRE(s.ok(), s.message());
  return data;
}

// Rank 0 holds the sum within float tolerance, and rank 1 the same bits.
void CheckSum(const std::vector<std::vector<float>>& data, std::size_t size, std::uint32_t op) {
  const testing::Reference ref = testing::ReferenceSum(2, size, op);
  BOOST_TEST_REQUIRE(data[0].size() == size);
  BOOST_TEST(testing::CountOutside(data[0], ref) == 0u);
  BOOST_TEST(testing::SameBits(data[1], data[0]), "rank 1 differs from rank 0");
}

BOOST_AUTO_TEST_SUITE(dist_ring_exchange)

BOOST_AUTO_TEST_CASE(two_ranks_exchange_identically_and_as_the_ring_would_for_every_size) {
  for (Transport transport : testing::kTransports) {
    for (bool caller_sends : {true, false}) {
      // segment 1000: odd sizes end in a short segment; 100'003 floats make 101 messages.
      Ring exchange(testing::MakeRing(transport, 2),
                    {.segment_floats = 1000, .caller_sends = caller_sends});
      Ring ring(testing::MakeRing(transport, 2),
                {.segment_floats = 1000, .direct_exchange = false, .caller_sends = caller_sends});
      std::uint32_t op = 0;
      for (std::size_t size : {0, 1, 2, 3, 999, 1000, 1001, 100'003}) {  // NOLINT
        ++op;
        BOOST_TEST_CONTEXT(transport << ", " << size << " floats"
                                     << (caller_sends ? "" : ", threaded")) {
          const std::vector<std::vector<float>> sum = Reduce(exchange, size, op);
          CheckSum(sum, size, op);
          BOOST_TEST(testing::SameBits(Reduce(ring, size, op)[0], sum[0]));
          // The mean: (a + b) * 1/2 on both ranks, the ring's bits too.
          const std::vector<std::vector<float>> mean = Reduce(exchange, size, op + 1000, true);
          BOOST_TEST(testing::SameBits(mean[1], mean[0]));
          BOOST_TEST(testing::SameBits(Reduce(ring, size, op + 1000, true)[0], mean[0]));
          std::vector<float> halved = Reduce(exchange, size, op + 2000, false, op + 1000)[0];
          for (float& x : halved) x *= 0.5f;
          BOOST_TEST(testing::SameBits(mean[0], halved));
          BOOST_TEST(exchange.ranks[0]->last_op().bytes_sent == size * sizeof(float));
          BOOST_TEST(exchange.ranks[0]->last_op().bytes_received == size * sizeof(float));
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_rank_may_drive_its_op_either_way_whatever_its_peers_do) {
  // Ranks that send from the calling thread and ranks that send from the sender thread exchange
  // the same messages in the same order.
  for (int world : {2, 3, 4}) {
    BOOST_TEST_CONTEXT("world " << world) {
      std::vector<RingLinks> links = testing::MakeRing(Transport::kTcp, world);
      std::vector<std::unique_ptr<RingAllReduce>> ranks;
      for (int r = 0; r < world; ++r) {
        const RingLinks& l = links[static_cast<std::size_t>(r)];
        ranks.push_back(std::make_unique<RingAllReduce>(
            r, world, l.left, l.right,
            RingOptions{.segment_floats = 777, .caller_sends = r % 2 == 0}));
      }
      const std::size_t size = 54'321;
      std::vector<std::vector<float>> data(static_cast<std::size_t>(world));
      const std::vector<Status> status = testing::RunRanks(world, [&](int r) {
        data[static_cast<std::size_t>(r)] = testing::Input(r, size, 5);
        return ranks[static_cast<std::size_t>(r)]->AllReduceSum(data[static_cast<std::size_t>(r)],
                                                                5);
      });
      for (const Status& s : status) BOOST_TEST_REQUIRE(s.ok(), s.message());
      BOOST_TEST(testing::CountOutside(data[0], testing::ReferenceSum(world, size, 5)) == 0u);
      for (int r = 1; r < world; ++r) {
        BOOST_TEST(testing::SameBits(data[static_cast<std::size_t>(r)], data[0]));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_blocked_send_is_rescued_and_the_next_ops_are_threaded) {
  // Links that hold one message: every rank's second send blocks until its peer receives, which
  // a calling thread that is still sending does not. The sender thread must receive meanwhile.
  for (int world : {2, 3}) {
    BOOST_TEST_CONTEXT("world " << world) {
      Ring ring(MakeLocalRing(world, /*capacity_bytes=*/1024),
                {.timeout = 60s, .segment_floats = 5'000});
      for (const auto& rank : ring.ranks) BOOST_TEST(rank->caller_sends());
      const std::size_t size = 60'000;
      const Clock::time_point start = Clock::now();
      std::vector<std::vector<float>> data = Reduce(ring, size, 1);
      BOOST_TEST(testing::SecondsSince(start) < 30.0);
      const testing::Reference ref = testing::ReferenceSum(world, size, 1);
      BOOST_TEST(testing::CountOutside(data[0], ref) == 0u);
      int threaded = 0;
      for (int r = 0; r < world; ++r) {
        BOOST_TEST(testing::SameBits(data[static_cast<std::size_t>(r)], data[0]));
        threaded += ring.ranks[static_cast<std::size_t>(r)]->caller_sends() ? 0 : 1;
      }
      BOOST_TEST(threaded >= 1, "no rank was rescued");
      // Later ops run, threaded where a rank was rescued, with the same result.
      for (std::uint32_t op = 2; op <= 4; ++op) {
        data = Reduce(ring, size, op);
        BOOST_TEST(testing::CountOutside(data[0], testing::ReferenceSum(world, size, op)) == 0u);
        for (int r = 1; r < world; ++r) {
          BOOST_TEST(testing::SameBits(data[static_cast<std::size_t>(r)], data[0]));
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(caller_sends_off_means_every_op_is_threaded) {
  std::vector<RingLinks> links = MakeLocalRing(2);
  RingAllReduce ring(0, 2, links[0].left, links[0].right, {.caller_sends = false});
  BOOST_TEST(!ring.caller_sends());
  RingAllReduce single(0, 1, nullptr, nullptr);
  BOOST_TEST(single.caller_sends());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ring_exchange_test
}  // namespace dtrain::dist
