// Sync replicas over two levels (TwoLevelRing's HierarchicalAllReduce as the MeanCollective of
// MakeMeanSyncStrategy), over real rings joined with JoinRings, ranks as threads of this process
// told apart into hosts by a plan from made-up host keys (round robin, as the daemon places them):
// with the whole gradient after the pass and bucket by bucket during it, every replica steps to the
// same parameters, the mean of the replicas' gradients; stop votes cast by any replica are agreed
// by all at that step; the bytes counted as sent are the ring across hosts' only; on 2 hosts of 2
// the buckets give the whole exchange's bits; one host alone plans nothing. PowerSGD's means over
// two levels (CompressedSyncStrategy with the two levels as its MeanCollective) keep replicas
// alike, match the flat ring's to rounding, and each host sends what one replica of 2 x 1 sends.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <vector>

#include "core/dist/compressed_sync_strategy.h"
#include "core/dist/host_sync_strategy.h"
#include "core/dist/shard_ranges.h"
#include "core/dist/two_level_ring.h"
#include "core/dist/voting_allreduce.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kParams = 1001;
constexpr float kLr = 0.5f;
constexpr int kSteps = 4;
// The pass finishes the gradient from its end: three buckets, the last floats first.
const std::vector<GradientBucket> kBucketPlan = {{600, kParams}, {200, 600}, {0, 200}};

enum class Exchange { kWhole, kBuckets };

// The plan for `world` ranks placed round robin on `hosts` made-up hosts.
std::optional<HostGroups> PlanOf(int hosts, int world) {
  std::vector<std::uint64_t> keys;
  for (int r = 0; r < world; ++r) keys.push_back(77 + static_cast<std::uint64_t>(r % hosts));
  return HostGroups::Plan(keys);
}

struct Job {
  Job(int hosts, int world, LinkTransport over) : transport(over), groups(PlanOf(hosts, world)) {
    for (int r = 0; r < world; ++r) {
      Result<PeerListener> l = PeerListener::Open("127.0.0.1");
      BOOST_TEST_REQUIRE(l.ok(), l.status().message());
      endpoints.push_back({"127.0.0.1", l.value().port()});
      listeners.push_back(std::move(l).value());
    }
  }
  TwoLevelJoin JoinOf(int rank) const {
    return {.rank = rank,
            .endpoints = endpoints,
            .listener = &listeners[static_cast<std::size_t>(rank)],
            .deadline = Clock::now() + 20s,
            .token = "",
            .transport = transport,
            .ring_options = {.timeout = 20s}};
  }
  LinkTransport transport;
  std::optional<HostGroups> groups;
  std::vector<PeerListener> listeners;
  std::vector<Endpoint> endpoints;
};

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
    train::PassExchange* pass = sync->DuringPass();
    overlapped[i] = pass != nullptr ? 1 : 0;
    std::vector<float> grad(kParams + sync->GradientTail());
    const std::span<float> g = std::span<float>(grad).first(kParams);
    const train::StepShare share{1, n};
    for (int step = 0; step < kSteps; ++step) {
      if (r == world - 1 && step == 1) sync->ProposeStop(train::StopReason::kTargetReached);
      if (r == 0 && step == 3) sync->ProposeStop(train::StopReason::kRequested);
      if (pass != nullptr) pass->Start(step, g, share, false);
      const std::vector<float> mine = testing::Input(r, kParams, static_cast<std::uint32_t>(step));
      std::copy(mine.begin(), mine.end(), grad.begin());
      if (pass != nullptr) {
        for (const GradientBucket& bucket : kBucketPlan) pass->Finished(bucket.begin);
      }
      if (Status s = sync->Apply(step, run.params[i], g, kLr, share); !s.ok()) return s;
      const std::optional<train::StopReason> stop = sync->AgreedStop();
      run.agreed[i].push_back(stop ? static_cast<int>(*stop) : -1);
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
      const std::vector<int> want{-1, static_cast<int>(train::StopReason::kTargetReached), -1,
                                  static_cast<int>(train::StopReason::kRequested)};
      BOOST_TEST(run.agreed[i] == want, boost::test_tools::per_element());
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

// A 64 x 64 weight matrix (PowerSGD's factors at rank 4: an eighth of it) and its 64 biases.
constexpr std::size_t kSide = 64;
constexpr std::size_t kCompressedParams = kSide * kSide + kSide;
const compress::Settings kPowerSgd{.method = compress::Method::kPowerSgd, .rank = 4};

std::vector<compress::TensorPlan> PowerSgdPlan() {
  const std::vector<model::ParamTensor> tensors{
      {.offset = 0, .rows = kSide, .cols = kSide, .name = "weights"},
      {.offset = kSide * kSide, .rows = 1, .cols = kSide, .name = "biases"}};
  return compress::PlanCompression(tensors, kPowerSgd);
}

// `hosts` x (world / hosts) replicas step kSteps times by PowerSGD, their means over two levels
// (hosts >= 2) or over the flat ring of all (hosts == 1).
Run TrainPowerSgd(int hosts, int world) {
  const auto n = static_cast<std::size_t>(world);
  Run run{.status = {},
          .params = std::vector<std::vector<float>>(n, std::vector<float>(kCompressedParams, 0.0f)),
          .agreed = {},
          .sent = std::vector<std::uint64_t>(n)};
  std::vector<RingLinks> flat = testing::MakeRing(testing::Transport::kLocal, world);
  std::optional<Job> job;
  if (hosts > 1) job.emplace(hosts, world, LinkTransport::kAuto);
  run.status = testing::RunRanks(world, [&](int r) -> Status {
    const auto i = static_cast<std::size_t>(r);
    RingAllReduce ring(r, world, flat[i].left, flat[i].right);
    std::unique_ptr<TwoLevelRing> two_level;
    if (job) {
      Result<std::unique_ptr<TwoLevelRing>> made = MakeTwoLevelRing(*job->groups, job->JoinOf(r));
      if (!made.ok()) return made.status();
      two_level = std::move(made).value();
    }
    MeanCollective& mean = two_level ? two_level->mean() : static_cast<MeanCollective&>(ring);
    CompressedSyncStrategy sync(ring, mean, PowerSgdPlan(), kPowerSgd, /*seed=*/5,
                                optim::MakeOptimizer({}, 0, kCompressedParams), 0.0f);
    std::vector<float> grad(kCompressedParams);
    const train::StepShare share{1, n};
    for (int step = 0; step < kSteps; ++step) {
      grad = testing::Input(r, kCompressedParams, static_cast<std::uint32_t>(step));
      if (Status s = sync.Apply(step, run.params[i], grad, kLr, share); !s.ok()) return s;
    }
    run.sent[i] = sync.Stats().bytes_sent;
    return Status::Ok();
  });
  for (std::size_t i = 0; i < n; ++i) {
    BOOST_TEST_REQUIRE(run.status[i].ok(), run.status[i].message());
  }
  return run;
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

// The same math in another order of sums: the flat ring's parameters to rounding; and the host's
// replicas together send across hosts what the one replica of a host sends in a 2 x 1 job.
BOOST_AUTO_TEST_CASE(powersgd_over_two_levels_is_the_flat_rings_and_sends_one_replicas_bytes) {
  const Run two_level = TrainPowerSgd(2, 4);
  const Run flat = TrainPowerSgd(1, 4);
  for (std::size_t r = 0; r < 4; ++r) {
    BOOST_TEST(testing::SameBits(two_level.params[r], two_level.params[0]));
  }
  double largest = 0.0, worst = 0.0;
  for (std::size_t f = 0; f < kCompressedParams; ++f) {
    largest = std::max(largest, static_cast<double>(std::fabs(flat.params[0][f])));
    worst =
        std::max(worst, static_cast<double>(std::fabs(two_level.params[0][f] - flat.params[0][f])));
  }
  BOOST_TEST(largest > 0.0);
  BOOST_TEST(worst <= 1e-4 * largest);

  const Run one_per_host = TrainPowerSgd(1, 2);  // 2 x 1: one ring of the two hosts' replicas
  const std::optional<HostGroups> groups = PlanOf(2, 4);
  for (int host = 0; host < 2; ++host) {
    std::uint64_t sent = 0;
    for (int r = 0; r < 4; ++r) {
      if (groups->Host(r) == host) sent += two_level.sent[static_cast<std::size_t>(r)];
    }
    BOOST_TEST(sent == one_per_host.sent[0]);
  }
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

}  // namespace
}  // namespace dtrain::dist
