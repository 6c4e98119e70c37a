// Middle ranges with more than two ranks (RingOptions::scatter_sum_bytes, on what a rank sends that
// way): each chunk's values go both ways round the ring to the rank that sums it, in the ring's
// order, and the sums go both ways to every rank. Every rank must end with the bits of the ring
// (scatter_sum_bytes = 0), whatever the world (1 to 7), the size around the thresholds, the way an
// op is driven or how little a link buffers, over every transport; each link carries what the two
// phases send that way, R(R+3)/2 chunks rightward and L(L+3)/2 leftward (R = ceil((world-1)/2),
// L = floor((world-1)/2)), and the ring takes the sizes beyond the threshold and, by default, the
// worlds beyond 4.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <vector>

#include "core/dist/ring_allreduce.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace ring_scatter_sum_test {

using namespace std::chrono_literals;
using testing::CountedRing;
using testing::Reduced;
using testing::Ring;
using testing::Transport;

constexpr std::uint32_t kOp = 11;
const RingOptions kTheRing{.timeout = 60s, .gather_sum_bytes = 0, .scatter_sum_bytes = 0};
// Every range both ways by chunks, whatever its size and the world.
constexpr std::size_t kAlways = std::size_t{1} << 30;
constexpr int kAnyWorld = 64;

// Floats of the smallest range a ring of `world` ranks does not gather by default.
std::size_t FirstUngathered(int world) {
  return RingOptions{}.gather_sum_bytes / sizeof(float) / static_cast<std::size_t>(world - 1) + 1;
}
// Floats of the largest range it scatters by default: every chunk as large as the largest.
std::size_t LastScattered(int world) {
  return world < 3 ? 1
                   : RingOptions{}.scatter_sum_bytes / sizeof(float) /
                         RingAllReduce::ScatterChunksSent(world) * static_cast<std::size_t>(world);
}

BOOST_AUTO_TEST_SUITE(dist_ring_scatter_sum)

BOOST_AUTO_TEST_CASE(worlds_1_to_7_get_the_rings_bits_on_every_transport_around_the_thresholds) {
  for (Transport transport : testing::kTransports) {
    for (int world = 1; world <= 7; ++world) {
      const std::size_t first = world < 3 ? 1 : FirstUngathered(world);
      for (std::size_t size : {first, first + 1, std::size_t{20'000}, LastScattered(world),
                               LastScattered(world) + 1}) {
        for (bool mean : {false, true}) {
          BOOST_TEST_CONTEXT(transport << ", world " << world << ", " << size << " floats, "
                                       << (mean ? "mean" : "sum")) {
            Ring scattering(testing::MakeRing(transport, world), {.timeout = 60s});
            Ring ring(testing::MakeRing(transport, world), kTheRing);
            const Reduced got = testing::ReduceOnce(scattering, size, mean, kOp);
            const Reduced want = testing::ReduceOnce(ring, size, mean, kOp);
            const bool scatters = world >= 3 && world <= RingOptions{}.scatter_most_ranks &&
                                  size <= LastScattered(world);
            BOOST_TEST(RingAllReduce::ScattersToSum(world, size * sizeof(float), RingOptions{}) ==
                       scatters);
            for (std::size_t r = 0; r < got.data.size(); ++r) {
              BOOST_TEST_CONTEXT("rank " << r) {
                BOOST_TEST(testing::SameBits(got.data[r], want.data[r]));
                BOOST_TEST(got.bytes_sent[r] == scattering.ranks[r]->BytesSent(size));
                if (!scatters) BOOST_TEST(got.bytes_sent[r] == want.bytes_sent[r]);
              }
            }
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(each_link_carries_the_chunks_both_phases_send_its_way) {
  for (int world = 3; world <= 7; ++world) {
    for (bool caller_sends : {true, false}) {
      BOOST_TEST_CONTEXT("world " << world << (caller_sends ? "" : ", threaded")) {
        const std::size_t chunk = 5000;  // every chunk the same size
        const std::size_t size = chunk * static_cast<std::size_t>(world);
        CountedRing counted(world, {.timeout = 60s,
                                    .segment_floats = 1500,
                                    .caller_sends = caller_sends,
                                    .scatter_sum_bytes = kAlways,
                                    .scatter_most_ranks = kAnyWorld});
        Ring ring(testing::MakeRing(Transport::kLocal, world), kTheRing);
        const Reduced got = testing::ReduceOnce(*counted.ring, size, /*mean=*/true, kOp);
        const Reduced want = testing::ReduceOnce(ring, size, /*mean=*/true, kOp);
        const std::size_t leftward = static_cast<std::size_t>(world - 1) / 2;
        const std::size_t rightward = static_cast<std::size_t>(world - 1) - leftward;
        for (std::size_t r = 0; r < got.data.size(); ++r) {
          BOOST_TEST_CONTEXT("rank " << r) {
            BOOST_TEST(testing::SameBits(got.data[r], want.data[r]));
            BOOST_TEST(counted.right[r]->floats_sent == rightward * (rightward + 3) / 2 * chunk);
            BOOST_TEST(counted.left[r]->floats_sent == leftward * (leftward + 3) / 2 * chunk);
            BOOST_TEST(got.bytes_sent[r] ==
                       (counted.right[r]->floats_sent + counted.left[r]->floats_sent) *
                           sizeof(float));
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(links_that_buffer_less_than_a_message_do_not_stall_it) {
  // Every rank first sends its values of several chunks both ways, in segments far larger than a
  // link holds: a rank that could not receive while it sends would block there for good.
  for (int world = 3; world <= 6; ++world) {
    for (bool caller_sends : {true, false}) {
      BOOST_TEST_CONTEXT("world " << world << (caller_sends ? "" : ", threaded")) {
        const std::size_t size = 40'000;
        Ring scattering(MakeLocalRing(world, /*capacity_bytes=*/1024),
                        {.timeout = 60s,
                         .segment_floats = 3000,
                         .caller_sends = caller_sends,
                         .scatter_sum_bytes = kAlways,
                         .scatter_most_ranks = kAnyWorld});
        Ring ring(testing::MakeRing(Transport::kLocal, world), kTheRing);
        const Clock::time_point start = Clock::now();
        const Reduced got = testing::ReduceOnce(scattering, size, /*mean=*/false, kOp);
        BOOST_TEST(testing::SecondsSince(start) < 30.0);
        const Reduced want = testing::ReduceOnce(ring, size, /*mean=*/false, kOp);
        for (std::size_t r = 0; r < got.data.size(); ++r) {
          BOOST_TEST(testing::SameBits(got.data[r], want.data[r]), "rank " << r);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(ops_in_a_row_reuse_the_ring_and_keep_its_bits) {
  // A training loop's op after op, sizes changing: the slots of one op never leak into the next.
  Ring scattering(testing::MakeRing(Transport::kTcp, 4),
                  {.timeout = 60s, .scatter_sum_bytes = kAlways, .scatter_most_ranks = kAnyWorld});
  Ring ring(testing::MakeRing(Transport::kTcp, 4), kTheRing);
  for (std::size_t size :
       {std::size_t{30'000}, std::size_t{9'001}, std::size_t{65'536}, std::size_t{30'000}}) {
    BOOST_TEST_CONTEXT(size << " floats") {
      const Reduced got = testing::ReduceOnce(scattering, size, /*mean=*/true, kOp);
      const Reduced want = testing::ReduceOnce(ring, size, /*mean=*/true, kOp);
      for (std::size_t r = 0; r < got.data.size(); ++r) {
        BOOST_TEST(testing::SameBits(got.data[r], want.data[r]), "rank " << r);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_threshold_is_an_option_on_what_a_rank_sends_that_way) {
  // 112 KiB sent by default: above what gathers (32 KiB at 4 ranks), ranges up to 64 KiB at 4
  // ranks (7 chunks of 16 KiB), fewer at 8 where allowed (23 chunks: 8 x 4 KiB); by default not
  // beyond 4 ranks.
  BOOST_TEST(RingAllReduce::ScatterChunksSent(3) == 4u);
  BOOST_TEST(RingAllReduce::ScatterChunksSent(4) == 7u);
  BOOST_TEST(RingAllReduce::ScatterChunksSent(8) == 23u);
  BOOST_TEST(RingAllReduce::ScattersToSum(8, 8 * (4 << 10), {.scatter_most_ranks = 8}));
  BOOST_TEST(!RingAllReduce::ScattersToSum(8, 8 * (5 << 10), {.scatter_most_ranks = 8}));
  BOOST_TEST(!RingAllReduce::ScattersToSum(8, 8 * (4 << 10), RingOptions{}));
  BOOST_TEST(RingAllReduce::ScattersToSum(3, 60 << 10, RingOptions{}));
  BOOST_TEST(!RingAllReduce::ScattersToSum(5, 60 << 10, RingOptions{}));
  BOOST_TEST(!RingAllReduce::ScattersToSum(4, 32 << 10, RingOptions{}));  // gathers
  BOOST_TEST(RingAllReduce::ScattersToSum(4, (32 << 10) + 4, RingOptions{}));
  BOOST_TEST(RingAllReduce::ScattersToSum(4, 64 << 10, RingOptions{}));
  BOOST_TEST(!RingAllReduce::ScattersToSum(4, (64 << 10) + 4, RingOptions{}));
  BOOST_TEST(!RingAllReduce::ScattersToSum(2, 64 << 10, RingOptions{}));
  BOOST_TEST(!RingAllReduce::ScattersToSum(4, 64 << 10, kTheRing));
  BOOST_TEST(RingAllReduce::ScattersToSum(3, 8, {.gather_sum_bytes = 0}));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ring_scatter_sum_test
}  // namespace dtrain::dist
