// Sync replicas over two levels (TwoLevelRing's HierarchicalAllReduce as the MeanCollective of
// MakeMeanSyncStrategy), over real rings joined with JoinRings, ranks as threads of this process
// told apart into hosts by a plan from made-up host keys (round robin, as the daemon places them):
// with the whole gradient after the pass and bucket by bucket during it, every replica steps to the
// same parameters, the mean of the replicas' gradients; stop votes cast by any replica are agreed
// by all at that step; the bytes counted as sent are the ring across hosts' only; on 2 hosts of 2
// the buckets give the whole exchange's bits; one host alone plans nothing. Compressed exchanges
// over two levels: two_level_compressed_test.cc.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <vector>

#include "core/dist/host_sync_strategy.h"
#include "core/dist/shard_ranges.h"
#include "core/dist/two_level_ring.h"
#include "core/dist/voting_allreduce.h"
#include "ring_harness.h"
#include "two_level_harness.h"

namespace dtrain::dist {
namespace two_level_sync_test {

using testing::Exchange;
using testing::Job;
using testing::PlanOf;

constexpr std::size_t kParams = 1001;
constexpr float kLr = testing::kTrainerLr;
constexpr int kSteps = 4;
// The pass finishes the gradient from its end: three buckets, the last floats first.
const std::vector<GradientBucket> kBucketPlan = {{600, kParams}, {200, 600}, {0, 200}};

// What each replica of a run ends with.
struct Run {
  std::vector<Status> status;
  std::vector<std::vector<float>> params;
  std::vector<std::vector<int>> agreed;  // per step: the reason's number, -1 for none
  std::vector<std::uint64_t> sent;
  bool overlapped = false;  // every replica's strategy exchanged during the pass
};

// `hosts` x (world / hosts) replicas step kSteps times, by `how`; replica world-1 proposes a stop
// at step 1, replica 0 at step 3.
Run TrainTwoLevel(int hosts, int world, LinkTransport transport, Exchange how) {
  Job job(hosts, world, transport);
  BOOST_TEST_REQUIRE(job.groups.has_value());
  const auto n = static_cast<std::size_t>(world);
  Run run{.status = {},
          .params = std::vector<std::vector<float>>(n, std::vector<float>(kParams, 0.0f)),
          .agreed = std::vector<std::vector<int>>(n),
          .sent = std::vector<std::uint64_t>(n),
          .overlapped = true};
  std::vector<int> overlapped(n, 0);
  run.status = testing::RunRanks(world, [&](int r) -> Status {
    const auto i = static_cast<std::size_t>(r);
    Result<std::unique_ptr<TwoLevelRing>> rings = MakeTwoLevelRing(*job.groups, job.JoinOf(r));
    if (!rings.ok()) return rings.status();
    std::unique_ptr<train::Strategy> sync = MakeMeanSyncStrategy(
        rings.value()->mean(),
        how == Exchange::kBuckets ? kBucketPlan : std::vector<GradientBucket>{},
        optim::MakeOptimizer({}, 0, kParams), 0.0f);
    overlapped[i] = sync->DuringPass() != nullptr ? 1 : 0;
    std::vector<float> grad(kParams + sync->GradientTail());
    const std::span<float> g = std::span<float>(grad).first(kParams);
    for (int step = 0; step < kSteps; ++step) {
      const std::vector<float> mine = testing::Input(r, kParams, static_cast<std::uint32_t>(step));
      const std::span<const GradientBucket> buckets =
          how == Exchange::kBuckets ? std::span<const GradientBucket>(kBucketPlan)
                                    : std::span<const GradientBucket>();
      if (Status s = testing::StepAsTrainer(*sync, {.rank = r, .world = world, .step = step}, mine,
                                            g, buckets, run.params[i], run.agreed[i]);
          !s.ok()) {
        return s;
      }
    }
    run.sent[i] = sync->Stats().bytes_sent;
    return Status::Ok();
  });
  for (int o : overlapped) run.overlapped = run.overlapped && o == 1;
  return run;
}

// The floats rank `r` of a job on two hosts sends across them a step: its local index's share of
// each op's range (the first op's with the votes after it).
std::size_t CrossFloatsPerStep(const HostGroups& groups, int r, Exchange how) {
  const int chunks = groups.per_host();
  const int index = groups.LocalIndex(r);
  const std::size_t votes = VotingAllReduce::kVoteFloats;
  if (how == Exchange::kWhole) return ShardRangeOf(kParams + votes, chunks, index).size();
  std::size_t floats = 0;
  for (std::size_t b = 0; b < kBucketPlan.size(); ++b) {
    const std::size_t size = kBucketPlan[b].end - kBucketPlan[b].begin + (b == 0 ? votes : 0);
    floats += ShardRangeOf(size, chunks, index).size();
  }
  return floats;
}

void CheckReplicasStepAlike(int hosts, int world, LinkTransport transport, Exchange how) {
  const Run run = TrainTwoLevel(hosts, world, transport, how);
  BOOST_TEST(run.overlapped == (how == Exchange::kBuckets));
  // The SGD step's sum of means, computed exactly, and a bound on the float sums' error.
  std::vector<double> expected(kParams, 0.0), tolerance(kParams, 0.0);
  for (int step = 0; step < kSteps; ++step) {
    const testing::Reference mean =
        testing::ReferenceSum(world, kParams, static_cast<std::uint32_t>(step));
    for (std::size_t f = 0; f < kParams; ++f) {
      expected[f] -= kLr * mean.sum[f] / world;
      tolerance[f] += kLr * (mean.tolerance[f] / world + std::fabs(mean.sum[f]) * 0x1p-22);
    }
  }
  const std::optional<HostGroups> groups = PlanOf(hosts, world);
  for (int r = 0; r < world; ++r) {
    const auto i = static_cast<std::size_t>(r);
    BOOST_TEST_CONTEXT("rank " << r) {
      BOOST_TEST_REQUIRE(run.status[i].ok(), run.status[i].message());
      BOOST_TEST(testing::SameBits(run.params[i], run.params[0]));
      BOOST_TEST(run.agreed[i] == testing::AgreedVotes(), boost::test_tools::per_element());
      // Each step, its chunk of the host's sum (one of world / hosts) across hosts, once: with
      // two hosts the ring across them is one exchange.
      if (hosts == 2) {
        const std::size_t floats = CrossFloatsPerStep(*groups, r, how);
        BOOST_TEST(run.sent[i] == kSteps * floats * sizeof(float));
      }
    }
  }
  std::size_t outside = 0;
  for (std::size_t f = 0; f < kParams; ++f) {
    if (std::fabs(run.params[0][f] - expected[f]) > tolerance[f] + 1e-6) ++outside;
  }
  BOOST_TEST(outside == 0u);
}

BOOST_AUTO_TEST_SUITE(dist_two_level_sync)

// kAuto: every link of this one process is shared memory, the rings across "hosts" too.
BOOST_AUTO_TEST_CASE(replicas_step_alike_by_the_mean_and_agree_on_votes) {
  for (LinkTransport transport : {LinkTransport::kTcp, LinkTransport::kAuto}) {
    for (Exchange how : {Exchange::kWhole, Exchange::kBuckets}) {
      BOOST_TEST_CONTEXT((transport == LinkTransport::kTcp ? "tcp" : "auto")
                         << (how == Exchange::kWhole ? ", whole" : ", buckets")) {
        CheckReplicasStepAlike(2, 4, transport, how);
      }
    }
  }
}

// Three hosts of two, by buckets: each bucket summed in its own order across hosts.
BOOST_AUTO_TEST_CASE(three_hosts_of_two_step_alike_by_buckets) {
  CheckReplicasStepAlike(3, 6, LinkTransport::kAuto, Exchange::kBuckets);
}

// Each value is (a + b) + (c + d) at either level whatever the op's range: the same bits.
BOOST_AUTO_TEST_CASE(buckets_give_the_whole_exchanges_bits_on_two_hosts_of_two) {
  const Run whole = TrainTwoLevel(2, 4, LinkTransport::kAuto, Exchange::kWhole);
  const Run buckets = TrainTwoLevel(2, 4, LinkTransport::kAuto, Exchange::kBuckets);
  for (std::size_t r = 0; r < 4; ++r) {
    BOOST_TEST_REQUIRE(whole.status[r].ok(), whole.status[r].message());
    BOOST_TEST_REQUIRE(buckets.status[r].ok(), buckets.status[r].message());
  }
  BOOST_TEST(testing::SameBits(buckets.params[0], whole.params[0]));
}

BOOST_AUTO_TEST_CASE(ranks_of_one_host_agree_on_no_plan) {
  constexpr int kWorld = 3;
  std::vector<RingLinks> links = testing::MakeRing(testing::Transport::kLocal, kWorld);
  std::vector<std::optional<HostGroups>> plans(kWorld);
  const std::vector<Status> status = testing::RunRanks(kWorld, [&](int r) -> Status {
    const RingLinks& mine = links[static_cast<std::size_t>(r)];
    RingAllReduce ring(r, kWorld, mine.left, mine.right);
    Result<std::optional<HostGroups>> plan = AgreeHostGroups(ring);
    if (!plan.ok()) return plan.status();
    plans[static_cast<std::size_t>(r)] = plan.value();
    return Status::Ok();
  });
  for (int r = 0; r < kWorld; ++r) {
    BOOST_TEST(status[static_cast<std::size_t>(r)].ok(),
               status[static_cast<std::size_t>(r)].message());
    BOOST_TEST(!plans[static_cast<std::size_t>(r)].has_value());
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace two_level_sync_test
}  // namespace dtrain::dist
