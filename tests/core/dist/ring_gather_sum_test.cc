// Small ranges with more than two ranks (RingOptions::gather_sum_bytes, on what a rank sends that
// way): every rank gathers every rank's whole range, both ways round the ring, and sums it in the
// ring's order. Every rank must end with the bits the ring gives (the same options with
// gather_sum_bytes = 0), whatever the world (1 to 7), the size around the threshold, the way an op
// is driven or how little a link buffers, ranks as threads and as processes; the bytes sent say
// which algorithm ran, and each way's share; a dead or silent peer is named as the ring names it;
// BytesSent tells the bytes in advance (also for the middle ranges of
// ring_scatter_sum_test.cc, and the ring's), and a dead peer is named in a middle op too.
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/dist/ring_allreduce.h"
#include "core/dist/ring_order_sum.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace ring_gather_sum_test {

using namespace std::chrono_literals;
using testing::CountedRing;
using testing::Reduced;
using testing::Ring;
using testing::Transport;

constexpr std::uint32_t kOp = 7;
// The largest range a ring of `world` ranks gathers by default: (world - 1) times its bytes are
// at most gather_sum_bytes (1 where it gathers none: the boundary sizes are then small ones).
std::size_t ThresholdFloats(int world) {
  return world < 3 ? 1 : RingOptions{}.gather_sum_bytes / sizeof(float) / (world - 1);
}

Reduced ReduceOnce(Ring& ring, std::size_t size, bool mean) {
  return testing::ReduceOnce(ring, size, mean, kOp);
}

// Reduces `size` floats both ways over `transport` and checks that every rank of the gathering
// ring holds the ring's bits, and that it gathered exactly where the threshold says.
void CheckAgainstTheRing(Transport transport, int world, std::size_t threshold_bytes,
                         std::size_t size, bool mean) {
  Ring gathering(testing::MakeRing(transport, world),
                 {.timeout = 60s, .gather_sum_bytes = threshold_bytes, .scatter_sum_bytes = 0});
  Ring ring(testing::MakeRing(transport, world),
            {.timeout = 60s, .gather_sum_bytes = 0, .scatter_sum_bytes = 0});
  const Reduced got = ReduceOnce(gathering, size, mean);
  const Reduced want = ReduceOnce(ring, size, mean);
  const bool gathers = world > 2 && threshold_bytes > 0 &&
                       static_cast<std::size_t>(world - 1) * size * sizeof(float) <= threshold_bytes;
  for (std::size_t r = 0; r < got.data.size(); ++r) {
    BOOST_TEST_CONTEXT("rank " << r) {
      BOOST_TEST(testing::SameBits(got.data[r], want.data[r]));
      BOOST_TEST(got.bytes_sent[r] ==
                 (gathers ? static_cast<std::uint64_t>(world - 1) * size * sizeof(float)
                          : want.bytes_sent[r]));
    }
  }
}

void CheckWorldsAndSizes(Transport transport) {
  for (int world = 1; world <= 7; ++world) {
    for (std::size_t size :
         {std::size_t{0}, std::size_t{1}, static_cast<std::size_t>(world - 1), std::size_t{1000},
          ThresholdFloats(world) - 1, ThresholdFloats(world), ThresholdFloats(world) + 1}) {
      for (bool mean : {false, true}) {
        BOOST_TEST_CONTEXT(transport << ", world " << world << ", " << size << " floats, "
                                     << (mean ? "mean" : "sum")) {
          CheckAgainstTheRing(transport, world, RingOptions{}.gather_sum_bytes, size, mean);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE(dist_ring_gather_sum)

BOOST_AUTO_TEST_CASE(in_process_worlds_1_to_7_get_the_rings_bits_around_the_threshold) {
  CheckWorldsAndSizes(Transport::kLocal);
}

BOOST_AUTO_TEST_CASE(tcp_worlds_1_to_7_get_the_rings_bits_around_the_threshold) {
  CheckWorldsAndSizes(Transport::kTcp);
}

BOOST_AUTO_TEST_CASE(each_range_goes_both_ways_round_the_ring_half_the_hops_each) {
  // floor(world/2) hops to the right and (world-1)/2 to the left: ceil((world-1)/2) dependent
  // hops instead of the ring's world-1, the same world-1 ranges sent.
  for (int world = 3; world <= 6; ++world) {
    for (bool caller_sends : {true, false}) {
      BOOST_TEST_CONTEXT("world " << world << (caller_sends ? "" : ", threaded")) {
        const std::size_t size = 1000;
        CountedRing counted(world,
                            {.timeout = 60s, .segment_floats = 300, .caller_sends = caller_sends});
        Ring& gathering = *counted.ring;
        const auto& left = counted.left;
        const auto& right = counted.right;
        Ring ring(testing::MakeRing(Transport::kLocal, world),
                  {.gather_sum_bytes = 0, .scatter_sum_bytes = 0});
        const Reduced got = ReduceOnce(gathering, size, /*mean=*/true);
        const Reduced want = ReduceOnce(ring, size, /*mean=*/true);
        for (std::size_t r = 0; r < got.data.size(); ++r) {
          BOOST_TEST_CONTEXT("rank " << r) {
            BOOST_TEST(testing::SameBits(got.data[r], want.data[r]));
            BOOST_TEST(right[r]->floats_sent == static_cast<std::size_t>(world / 2) * size);
            BOOST_TEST(left[r]->floats_sent == static_cast<std::size_t>((world - 1) / 2) * size);
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(links_that_buffer_less_than_a_message_do_not_stall_the_gather) {
  // Every rank first sends its range both ways, in segments far larger than a link holds: a rank
  // that could not receive while it sends would block there for good. The ring's bits still.
  for (int world = 3; world <= 6; ++world) {
    for (bool caller_sends : {true, false}) {
      BOOST_TEST_CONTEXT("world " << world << (caller_sends ? "" : ", threaded")) {
        const std::size_t size = ThresholdFloats(world);
        Ring gathering(MakeLocalRing(world, /*capacity_bytes=*/1024),
                       {.timeout = 60s, .segment_floats = 1000, .caller_sends = caller_sends});
        Ring ring(testing::MakeRing(Transport::kLocal, world),
                  {.gather_sum_bytes = 0, .scatter_sum_bytes = 0});
        const Clock::time_point start = Clock::now();
        const Reduced got = ReduceOnce(gathering, size, /*mean=*/false);
        BOOST_TEST(testing::SecondsSince(start) < 30.0);
        const Reduced want = ReduceOnce(ring, size, /*mean=*/false);
        for (std::size_t r = 0; r < got.data.size(); ++r) {
          BOOST_TEST(testing::SameBits(got.data[r], want.data[r]), "rank " << r);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_threshold_is_an_option_on_what_a_rank_sends_and_includes_its_own_size) {
  for (int world : {3, 5}) {
    for (std::size_t size : {999u, 1000u, 1001u}) {
      BOOST_TEST_CONTEXT("world " << world << ", " << size << " floats") {
        // A gather of 1000 floats sends (world - 1) * 4000 bytes.
        CheckAgainstTheRing(Transport::kLocal, world, /*threshold_bytes=*/4000 * (world - 1), size,
                            true);
      }
    }
  }
  // The default gathers ranges of 32 KiB at 4 ranks and 12 KiB at 9, as a rank then sends 96 KiB.
  BOOST_TEST(RingAllReduce::GathersToSum(4, 32 << 10, RingOptions{}));
  BOOST_TEST(!RingAllReduce::GathersToSum(4, (32 << 10) + 4, RingOptions{}));
  BOOST_TEST(RingAllReduce::GathersToSum(9, 12 << 10, RingOptions{}));
  BOOST_TEST(!RingAllReduce::GathersToSum(9, 16 << 10, RingOptions{}));
  BOOST_TEST(!RingAllReduce::GathersToSum(2, 4, RingOptions{}));
}

BOOST_AUTO_TEST_CASE(sums_each_chunk_in_the_rings_order_and_scales_its_last_addition) {
  // Three ranks, three floats: float c is chunk c, summed from rank c on, rank c-1 last.
  const std::vector<float> blocks = {1e8f,  1.0f,  -1e8f,  // rank 0
                                     -1e8f, 1e8f,  1.0f,   // rank 1
                                     1.0f,  -1e8f, 1e8f};  // rank 2
  std::vector<float> out(3);
  SumInRingOrder(blocks, 3, 1.0f, out);
  // Chunk 0: (1e8 + -1e8) + 1 = 1; chunk 1: (1e8 + -1e8) + 1 = 1; chunk 2: (1e8 + -1e8) + 1.
  BOOST_TEST(out == std::vector<float>({1.0f, 1.0f, 1.0f}), boost::test_tools::per_element());
  SumInRingOrder(blocks, 3, 0.5f, out);
  BOOST_TEST(out == std::vector<float>({0.5f, 0.5f, 0.5f}), boost::test_tools::per_element());
  // Where rank 0 came first for every chunk instead, chunk 1 would be (1 + 1e8) + -1e8 = 0.
}

// Rank `rank` of a forked TCP ring: reduces the mean of `size` floats and writes the result's
// bytes to `fd`, or its error.
int RankProcess(const LoopbackRing& listening, int rank, std::size_t size, int fd) {
  const auto report = [fd](const void* bytes, std::size_t n) {
    return ::write(fd, bytes, n) == static_cast<ssize_t>(n);
  };
  Result<RingLinks> links = listening.Join(rank, 10s);
  Status status = links.ok() ? Status::Ok() : links.status();
  std::vector<float> data = testing::Input(rank, size, kOp);
  if (status.ok()) {
    RingAllReduce ring(rank, listening.world(), links.value().left, links.value().right,
                       {.timeout = 60s});
    status = ring.AllReduceMean(data, kOp);
  }
  if (!status.ok()) {
    report(status.message().data(), status.message().size());
    return 1;
  }
  return report(data.data(), data.size() * sizeof(float)) ? 0 : 1;
}

BOOST_AUTO_TEST_CASE(ranks_as_processes_get_the_bits_of_the_ring_in_threads) {
  for (int world : {3, 4, 5}) {
    for (std::size_t size : {ThresholdFloats(world), ThresholdFloats(world) + 1}) {
      BOOST_TEST_CONTEXT("world " << world << ", " << size << " floats") {
        Result<LoopbackRing> listening = LoopbackRing::Listen(world, LinkTransport::kTcp);
        BOOST_TEST_REQUIRE(listening.ok(), listening.status().message());
        const std::vector<testing::ForkedRank> ranks = testing::ForkRanks(
            world, [&](int r, int fd) { return RankProcess(listening.value(), r, size, fd); });
        Ring ring(testing::MakeRing(Transport::kLocal, world),
                  {.gather_sum_bytes = 0, .scatter_sum_bytes = 0});
        const Reduced want = ReduceOnce(ring, size, /*mean=*/true);
        for (std::size_t r = 0; r < ranks.size(); ++r) {
          BOOST_TEST_CONTEXT("rank " << r) {
            BOOST_TEST_REQUIRE(
                (WIFEXITED(ranks[r].wait_status) && WEXITSTATUS(ranks[r].wait_status) == 0),
                ranks[r].output);
            BOOST_TEST_REQUIRE(ranks[r].output.size() == size * sizeof(float));
            std::vector<float> got(size);
            std::memcpy(got.data(), ranks[r].output.data(), ranks[r].output.size());
            BOOST_TEST(testing::SameBits(got, want.data[r]));
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(every_rank_names_a_peer_that_died_before_a_small_or_middle_op) {
  // 1000 floats gather; 13000 (52 KB) go both ways by chunks at 3 and 4 ranks
  // (ring_scatter_sum_test.cc), by the ring at 5 to 7.
  for (Transport transport : {Transport::kLocal, Transport::kTcp}) {
    for (int world = 3; world <= 7; ++world) {
      for (const std::pair<bool, int>& run : {std::pair{true, 1000}, std::pair{false, 1000},
                                              std::pair{true, 13000}, std::pair{false, 13000}}) {
        const bool caller_sends = run.first;
        const int size = run.second;
        const int victim = world / 2;
        BOOST_TEST_CONTEXT(transport << ", world " << world << ", victim " << victim << ", " << size
                                     << " floats" << (caller_sends ? "" : ", threaded")) {
          std::vector<RingLinks> links = testing::MakeRing(transport, world);
          const Clock::time_point start = Clock::now();
          const std::vector<Status> status = testing::RunRanks(world, [&](int r) {
            const RingLinks& mine = links[static_cast<std::size_t>(r)];
            if (r == victim) {
              mine.left->Close();
              mine.right->Close();
              return Status::Ok();
            }
            RingAllReduce ring(r, world, mine.left, mine.right,
                               {.timeout = 60s, .caller_sends = caller_sends});
            std::vector<float> data = testing::Input(r, static_cast<std::size_t>(size), kOp);
            return ring.AllReduceSum(data, kOp);
          });
          BOOST_TEST(testing::SecondsSince(start) < 30.0);
          for (int r = 0; r < world; ++r) {
            if (r == victim) continue;
            BOOST_TEST_CONTEXT("rank " << r) {
              const Status& s = status[static_cast<std::size_t>(r)];
              BOOST_TEST_REQUIRE(!s.ok());
              BOOST_TEST(testing::Mentions(s.message(), "rank " + std::to_string(victim)));
              BOOST_TEST(testing::Mentions(s.message(), "op 7"));
            }
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_silent_peer_in_a_small_op_is_named_by_its_right_neighbour_in_time) {
  for (int world : {3, 5}) {
    BOOST_TEST_CONTEXT("world " << world) {
      const int silent = world - 1;  // rank 0 receives from it
      std::vector<RingLinks> links = testing::MakeRing(Transport::kTcp, world);
      const Clock::time_point start = Clock::now();
      const std::vector<Status> status = testing::RunRanks(world, [&](int r) {
        if (r == silent) return Status::Ok();  // keeps its links open, never sends
        const RingLinks& mine = links[static_cast<std::size_t>(r)];
        RingAllReduce ring(r, world, mine.left, mine.right, {.timeout = 300ms});
        std::vector<float> data = testing::Input(r, 1000, kOp);
        return ring.AllReduceMean(data, kOp);
      });
      BOOST_TEST(testing::SecondsSince(start) < 30.0);
      for (int r = 0; r < silent; ++r) BOOST_TEST(!status[static_cast<std::size_t>(r)].ok());
      BOOST_TEST(testing::Mentions(status[0].message(), "timeout"));
      BOOST_TEST(testing::Mentions(status[0].message(), "rank " + std::to_string(silent)));
      BOOST_TEST(testing::Mentions(status[0].message(), "op 7"));
    }
  }
}

BOOST_AUTO_TEST_CASE(reduce_bytes_sent_says_what_each_rank_sends_whichever_way_the_op_goes) {
  // What compressed strategies weigh their savings against (compression_ratio).
  for (int world = 1; world <= 5; ++world) {
    for (bool direct : {true, false}) {
      Ring ring(testing::MakeRing(Transport::kLocal, world),
                {.timeout = 60s, .segment_floats = 4096, .direct_exchange = direct});
      for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{1001},
                               ThresholdFloats(world), ThresholdFloats(world) + 1,
                               std::size_t{65'536}, std::size_t{65'537}, std::size_t{100'003}}) {
        BOOST_TEST_CONTEXT("world " << world << ", " << size << " floats"
                                    << (direct ? "" : ", no direct exchange")) {
          const Reduced r = ReduceOnce(ring, size, false);
          for (int rank = 0; rank < world; ++rank) {
            BOOST_TEST(r.bytes_sent[static_cast<std::size_t>(rank)] ==
                       ring.ranks[static_cast<std::size_t>(rank)]->BytesSent(size));
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ring_gather_sum_test
}  // namespace dtrain::dist
