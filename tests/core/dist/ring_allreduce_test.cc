// Ring all-reduce results: ranks as threads over in-process links and over TCP on 127.0.0.1, and
// ranks as separate processes. Every rank must end with the sum (within the rounding of one float
// summation) and with exactly the same bits as every other rank, whatever the world size, the
// range size (empty, smaller than the world, not a multiple of it, large) or the segmenting.
#include "core/dist/ring_allreduce.h"

#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace ring_allreduce_test {

using namespace std::chrono_literals;
using testing::Ring;
using testing::Transport;

enum class Reduction { kSum, kMean };

// Every rank reduces its Input(rank, size, op) with op tag `op`; returns what each ended with.
std::vector<std::vector<float>> ReduceOnce(Ring& ring, std::size_t size, std::uint32_t op,
                                           Reduction reduction = Reduction::kSum) {
  std::vector<std::vector<float>> data(static_cast<std::size_t>(ring.world()));
  const std::vector<Status> status = testing::RunRanks(ring.world(), [&](int r) {
    std::vector<float>& mine = data[static_cast<std::size_t>(r)];
    mine = testing::Input(r, size, op);
    RingAllReduce& rank = *ring.ranks[static_cast<std::size_t>(r)];
    return reduction == Reduction::kSum ? rank.AllReduceSum(mine, op)
                                        : rank.AllReduceMean(mine, op);
  });
  for (const Status& s : status) BOOST_TEST_REQUIRE(s.ok(), s.message());
  return data;
}

// The sum within float tolerance on rank 0, and every rank bitwise equal to rank 0.
void CheckSum(const std::vector<std::vector<float>>& data, std::size_t size, std::uint32_t op) {
  const int world = static_cast<int>(data.size());
  const testing::Reference ref = testing::ReferenceSum(world, size, op);
  BOOST_TEST_REQUIRE(data[0].size() == size);
  BOOST_TEST(testing::CountOutside(data[0], ref) == 0u);
  for (int r = 1; r < world; ++r) {
    BOOST_TEST(testing::SameBits(data[static_cast<std::size_t>(r)], data[0]),
               "rank " << r << " differs from rank 0");
  }
}

// Either way of driving an op (RingOptions::caller_sends): the same messages, the same result.
const bool kCallerSends[] = {true, false};

void CheckWorldsAndSizes(Transport transport, int max_world) {
  for (bool caller_sends : kCallerSends) {
    for (int world = 1; world <= max_world; ++world) {
      // Small segments, so the large range goes as a pipeline of hundreds of messages per chunk.
      Ring ring(testing::MakeRing(transport, world),
                {.timeout = 60s, .segment_floats = 4096, .caller_sends = caller_sends});
      std::uint32_t op = 0;
      for (std::size_t size : {std::size_t{0}, std::size_t{1}, static_cast<std::size_t>(world - 1),
                               std::size_t{3}, std::size_t{1000}, std::size_t{1'000'003}}) {
        ++op;
        BOOST_TEST_CONTEXT(transport << ", world " << world << ", " << size << " floats"
                                     << (caller_sends ? "" : ", threaded")) {
          CheckSum(ReduceOnce(ring, size, op), size, op);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE(dist_ring_allreduce)

BOOST_AUTO_TEST_CASE(in_process_worlds_1_to_7_sum_every_size_identically) {
  CheckWorldsAndSizes(Transport::kLocal, 7);
}

BOOST_AUTO_TEST_CASE(tcp_worlds_1_to_7_sum_every_size_identically) {
  CheckWorldsAndSizes(Transport::kTcp, 7);
}

BOOST_AUTO_TEST_CASE(shm_worlds_1_to_5_sum_every_size_identically) {
  CheckWorldsAndSizes(Transport::kShm, 5);
}

BOOST_AUTO_TEST_CASE(the_mean_is_the_sum_times_one_over_world_bit_for_bit) {
  for (Transport transport : testing::kTransports) {
    for (int world : {2, 3, 7}) {
      for (bool caller_sends : kCallerSends) {
        BOOST_TEST_CONTEXT(transport << ", world " << world << (caller_sends ? "" : ", threaded")) {
          Ring ring(testing::MakeRing(transport, world),
                    {.segment_floats = 100, .caller_sends = caller_sends});
          const std::size_t size = 1001;
          std::vector<std::vector<float>> sum = ReduceOnce(ring, size, 1, Reduction::kSum);
          std::vector<std::vector<float>> mean = ReduceOnce(ring, size, 1, Reduction::kMean);
          for (float& x : sum[0]) x *= 1.0f / static_cast<float>(world);
          for (int r = 0; r < world; ++r) {
            BOOST_TEST(testing::SameBits(mean[static_cast<std::size_t>(r)], sum[0]));
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(many_consecutive_ops_with_increasing_tags) {
  for (Transport transport : testing::kTransports) {
    for (int world : {2, 4}) {
      BOOST_TEST_CONTEXT(transport << ", world " << world) {
        Ring ring(testing::MakeRing(transport, world), {.timeout = 60s, .segment_floats = 512});
        for (std::uint32_t op = 1; op <= 150; ++op) {
          const std::size_t size = (op * 7919u) % 5000u;
          BOOST_TEST_CONTEXT("op " << op << ", " << size << " floats") {
            CheckSum(ReduceOnce(ring, size, op), size, op);
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(segmenting_and_spinning_change_nothing_in_the_result) {
  const int world = 3;
  const std::size_t size = 1000;
  std::vector<float> reference;
  for (RingOptions options :
       {RingOptions{.segment_floats = 1},  // every float its own message
        RingOptions{.segment_floats = 7},
        RingOptions{.segment_floats = 1 << 20},  // one message per chunk
        RingOptions{.segment_floats = 64, .spin = 0us},
        RingOptions{.segment_floats = 64, .spin = 2000us},
        RingOptions{.segment_floats = 64, .yield = 0us},
        RingOptions{.segment_floats = 64, .spin = 50us, .yield = 0us},
        RingOptions{.segment_floats = 64, .caller_sends = false},
        RingOptions{.segment_floats = 64, .spin = 50us, .caller_sends = false, .yield = 0us}}) {
    BOOST_TEST_CONTEXT("segment " << options.segment_floats << ", spin " << options.spin.count()
                                  << " us, yield " << options.yield.count() << " us"
                                  << (options.caller_sends ? "" : ", threaded")) {
      Ring ring(testing::MakeRing(Transport::kLocal, world), options);
      std::vector<std::vector<float>> data = ReduceOnce(ring, size, 1);
      CheckSum(data, size, 1);
      if (reference.empty()) reference = data[0];
      BOOST_TEST(testing::SameBits(data[0], reference));
    }
  }
}

BOOST_AUTO_TEST_CASE(full_duplex_when_chunks_far_exceed_the_link_buffer) {
  // Each chunk goes as several messages into links that buffer 1 KiB: if a rank could not
  // receive while it sends, every rank would block in its second send and the ring would stall.
  // A calling thread that sends is rescued by its sender thread, which receives meanwhile.
  for (bool caller_sends : kCallerSends) {
    for (int world : {2, 3}) {
      BOOST_TEST_CONTEXT("world " << world << (caller_sends ? "" : ", threaded")) {
        Ring ring(MakeLocalRing(world, /*capacity_bytes=*/1024),
                  {.timeout = 60s, .segment_floats = 10'000, .caller_sends = caller_sends});
        const std::size_t size = 200'000;
        const Clock::time_point start = Clock::now();
        CheckSum(ReduceOnce(ring, size, 1), size, 1);
        BOOST_TEST(testing::SecondsSince(start) < 30.0);
      }
    }
  }
}

// Rank `rank` of a ring forked from this process: reduces three ops and leaves its last result
// (or its error) in `path`. Returns the exit status.
int RankProcess(const LoopbackRing& listening, int rank, std::size_t size, bool checksums,
                const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  Result<RingLinks> links = listening.Join(rank, 10s);
  if (!links.ok()) {
    out << links.status().message();
    return 1;
  }
  for (const auto& link : links.value().owned) link->SetSendChecksums(checksums);
  RingAllReduce ring(rank, listening.world(), links.value().left, links.value().right,
                     {.timeout = 60s, .segment_floats = 8192});
  std::vector<float> data;
  for (std::uint32_t op = 1; op <= 3; ++op) {
    data = testing::Input(rank, size, op);
    if (Status s = ring.AllReduceSum(data, op); !s.ok()) {
      out << s.message();
      return 1;
    }
  }
  out.write(reinterpret_cast<const char*>(data.data()),
            static_cast<std::streamsize>(data.size() * sizeof(float)));
  return out.good() ? 0 : 1;
}

std::vector<std::vector<float>> ReduceInProcesses(int world, LinkTransport transport,
                                                  bool checksums = true) {
  const std::size_t size = 300'007;
  dtrain::testing::TempDir dir;
  Result<LoopbackRing> listening = LoopbackRing::Listen(world, transport);
  BOOST_TEST_REQUIRE(listening.ok(), listening.status().message());
  std::vector<pid_t> children;
  for (int r = 0; r < world; ++r) {
    const pid_t pid = ::fork();
    BOOST_TEST_REQUIRE(pid >= 0);
    if (pid == 0) {
      ::_exit(RankProcess(listening.value(), r, size, checksums,
                          dir.Path("rank" + std::to_string(r))));
    }
    children.push_back(pid);
  }
  std::vector<std::vector<float>> data;
  for (int r = 0; r < world; ++r) {
    int status = 0;
    ::waitpid(children[static_cast<std::size_t>(r)], &status, 0);
    const std::string bytes = dtrain::testing::ReadFile(dir.Path("rank" + std::to_string(r)));
    BOOST_TEST_REQUIRE(
        (WIFEXITED(status) && WEXITSTATUS(status) == 0),
        "rank " << r << " failed: "
                << (bytes.size() == size * sizeof(float) ? "(it wrote a result)" : bytes));
    BOOST_TEST_REQUIRE(bytes.size() == size * sizeof(float));
    data.emplace_back(size);
    std::memcpy(data.back().data(), bytes.data(), bytes.size());
  }
  CheckSum(data, size, 3);
  return data;
}

BOOST_AUTO_TEST_CASE(ranks_as_separate_processes_agree_bit_for_bit) {
  for (int world : {2, 3}) {
    BOOST_TEST_CONTEXT("world " << world) { ReduceInProcesses(world, LinkTransport::kTcp); }
  }
}

BOOST_AUTO_TEST_CASE(processes_over_shared_memory_get_the_bits_of_tcp) {
  for (int world : {2, 3, 4}) {
    BOOST_TEST_CONTEXT("world " << world) {
      const std::vector<std::vector<float>> shm = ReduceInProcesses(world, LinkTransport::kAuto);
      const std::vector<std::vector<float>> tcp = ReduceInProcesses(world, LinkTransport::kTcp);
      BOOST_TEST_REQUIRE(shm.size() == tcp.size());
      for (std::size_t r = 0; r < shm.size(); ++r) {
        BOOST_TEST(testing::SameBits(shm[r], tcp[r]), "rank " << r);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(tcp_without_checksums_gets_the_same_bits) {
  for (int world : {2, 3}) {
    BOOST_TEST_CONTEXT("world " << world) {
      const auto unchecked = ReduceInProcesses(world, LinkTransport::kTcp, /*checksums=*/false);
      const auto checked = ReduceInProcesses(world, LinkTransport::kTcp);
      for (std::size_t r = 0; r < unchecked.size(); ++r) {
        BOOST_TEST(testing::SameBits(unchecked[r], checked[r]), "rank " << r);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(invalid_arguments_make_every_op_fail_saying_why) {
  std::vector<RingLinks> links = MakeLocalRing(3);
  std::vector<float> data(10);
  const auto message = [&](int rank, int world, Link* left, Link* right, RingOptions options) {
    RingAllReduce ring(rank, world, left, right, options);
    const Status s = ring.AllReduceSum(data, 1);
    BOOST_TEST(!s.ok());
    return s.message();
  };
  BOOST_TEST(testing::Mentions(message(3, 3, links[0].left, links[0].right, {}), "[0, world)"));
  BOOST_TEST(testing::Mentions(message(0, 0, nullptr, nullptr, {}), "[0, world)"));
  BOOST_TEST(testing::Mentions(message(0, 3, nullptr, links[0].right, {}), "link"));
  BOOST_TEST(testing::Mentions(message(0, 3, links[0].left, links[0].right, {.segment_floats = 0}),
                               "positive"));
  RingAllReduce one(0, 1, nullptr, nullptr);
  BOOST_TEST(one.AllReduceMean(data, 1).ok());
  const Status big_tag = one.AllReduceSum(data, RingAllReduce::kMaxOp + 1);
  BOOST_TEST(testing::Mentions(big_tag.message(), "2^31"));
}

// A ring of one has no links to close: Leave is what fails its next op (an elastic job's lone
// member told to regroup when a replica joins).
BOOST_AUTO_TEST_CASE(a_rank_that_left_fails_every_later_op_even_alone) {
  std::vector<float> data(10, 1.0f);
  RingAllReduce one(0, 1, nullptr, nullptr);
  BOOST_TEST(one.AllReduceSum(data, 1).ok());
  one.Leave();
  for (std::uint32_t op = 2; op < 4; ++op) {
    const Status s = one.AllReduceMean(data, op);
    BOOST_TEST(!s.ok());
    BOOST_TEST(testing::Mentions(s.message(), "left the ring"), s.message());
  }
  BOOST_TEST(!one.AllGather(data, 4).ok());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ring_allreduce_test
}  // namespace dtrain::dist
