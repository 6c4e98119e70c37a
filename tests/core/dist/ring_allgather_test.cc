// RingAllReduce::AllGather: ranks as threads over in-process links, TCP and shared memory. Every
// rank must end with every rank's block where that rank put it, bit for bit, whatever the world,
// the block size (empty, one float, many segments), the way an op is driven or how little a link
// buffers (the blocks go both ways round the ring at once); gathers and all-reduces share one ring
// and its op tags.
#include <boost/test/unit_test.hpp>
#include <memory>
#include <vector>

#include "ring_harness.h"

namespace dtrain::dist {
namespace ring_allgather_test {

using namespace std::chrono_literals;
using testing::Ring;
using testing::Transport;

// Every rank gathers world blocks of `block` floats, its own Input(rank, block, op); returns what
// each ended with.
std::vector<std::vector<float>> GatherOnce(Ring& ring, std::size_t block, std::uint32_t op) {
  const auto world = static_cast<std::size_t>(ring.world());
  std::vector<std::vector<float>> data(world);
  const std::vector<Status> status = testing::RunRanks(ring.world(), [&](int r) {
    std::vector<float>& mine = data[static_cast<std::size_t>(r)];
    mine.assign(world * block, -1.0f);
    const std::vector<float> own = testing::Input(r, block, op);
    std::copy(own.begin(), own.end(), mine.begin() + static_cast<long>(r * block));
    return ring.ranks[static_cast<std::size_t>(r)]->AllGather(mine, op);
  });
  for (const Status& s : status) BOOST_TEST_REQUIRE(s.ok(), s.message());
  return data;
}

// Every rank holds every rank's block.
void CheckGathered(const std::vector<std::vector<float>>& data, std::size_t block,
                   std::uint32_t op) {
  std::vector<float> want;
  for (int r = 0; r < static_cast<int>(data.size()); ++r) {
    const std::vector<float> own = testing::Input(r, block, op);
    want.insert(want.end(), own.begin(), own.end());
  }
  for (std::size_t r = 0; r < data.size(); ++r) {
    BOOST_TEST(testing::SameBits(data[r], want), "rank " << r << " gathered other values");
  }
}

BOOST_AUTO_TEST_SUITE(dist_ring_allgather)

BOOST_AUTO_TEST_CASE(every_transport_world_and_block_size_gathers_every_block_everywhere) {
  for (Transport transport : testing::kTransports) {
    for (bool caller_sends : {true, false}) {
      for (int world = 1; world <= 5; ++world) {
        Ring ring(testing::MakeRing(transport, world),
                  {.timeout = 60s, .segment_floats = 4096, .caller_sends = caller_sends});
        std::uint32_t op = 0;
        for (std::size_t block : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{1000},
                                  std::size_t{100'003}}) {
          ++op;
          BOOST_TEST_CONTEXT(transport << ", world " << world << ", blocks of " << block
                                       << (caller_sends ? "" : ", threaded")) {
            CheckGathered(GatherOnce(ring, block, op), block, op);
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(gathers_and_all_reduces_take_turns_on_one_ring) {
  Ring ring(testing::MakeRing(Transport::kLocal, 3), {.timeout = 60s, .segment_floats = 512});
  for (std::uint32_t op = 1; op <= 6; ++op) {
    BOOST_TEST_CONTEXT("op " << op) {
      if (op % 2 == 1) {
        CheckGathered(GatherOnce(ring, 2000, op), 2000, op);
        continue;
      }
      std::vector<std::vector<float>> data(3);
      const std::vector<Status> status = testing::RunRanks(3, [&](int r) {
        data[static_cast<std::size_t>(r)] = testing::Input(r, 5000, op);
        return ring.ranks[static_cast<std::size_t>(r)]->AllReduceSum(
            data[static_cast<std::size_t>(r)], op);
      });
      for (const Status& s : status) BOOST_TEST_REQUIRE(s.ok(), s.message());
      BOOST_TEST(testing::CountOutside(data[0], testing::ReferenceSum(3, 5000, op)) == 0u);
      BOOST_TEST(testing::SameBits(data[1], data[0]));
      BOOST_TEST(testing::SameBits(data[2], data[0]));
    }
  }
}

BOOST_AUTO_TEST_CASE(blocks_far_larger_than_the_link_buffer_do_not_stall) {
  for (bool caller_sends : {true, false}) {
    for (int world : {2, 3, 4, 5, 6}) {
      // 1000 floats go both ways round the ring (with more than two ranks), 100,000 one way.
      for (std::size_t block : {std::size_t{1000}, std::size_t{100'000}}) {
        BOOST_TEST_CONTEXT("world " << world << ", blocks of " << block
                                    << (caller_sends ? "" : ", threaded")) {
          Ring ring(MakeLocalRing(world, /*capacity_bytes=*/1024),
                    {.timeout = 60s, .segment_floats = block / 10, .caller_sends = caller_sends});
          CheckGathered(GatherOnce(ring, block, 1), block, 1);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_range_that_is_not_world_equal_blocks_is_refused_saying_why) {
  Ring ring(testing::MakeRing(Transport::kLocal, 3), {.timeout = 10s});
  std::vector<float> data(10);
  const Status s = ring.ranks[0]->AllGather(data, 1);
  BOOST_TEST(!s.ok());
  BOOST_TEST(s.message().find("10 floats are not 3 equal blocks") != std::string::npos,
             s.message());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ring_allgather_test
}  // namespace dtrain::dist
