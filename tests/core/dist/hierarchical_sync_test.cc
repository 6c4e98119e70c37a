// HierarchicalSyncStrategy (core/dist/hierarchical_sync_strategy.h) over real rings joined with
// JoinRings, ranks as threads of this process told apart into hosts by a plan from made-up host
// keys (round robin, as the daemon places them): every replica steps to the same parameters, the
// mean of the replicas' gradients; stop votes cast by any replica are agreed by all at that step;
// the bytes counted as sent are the ring across hosts' only; one host alone plans nothing.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <vector>

#include "core/dist/hierarchical_sync_strategy.h"
#include "core/dist/shard_ranges.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kParams = 1001;
constexpr float kLr = 0.5f;

struct Job {
  Job(int hosts, int world, LinkTransport over) : transport(over) {
    std::vector<std::uint64_t> keys;
    for (int r = 0; r < world; ++r) keys.push_back(77 + static_cast<std::uint64_t>(r % hosts));
    groups = HostGroups::Plan(keys);
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

// 2 "hosts" x 2 replicas step 4 times; one replica proposes a stop at step 1, another at step 3.
void CheckReplicasStepAlike(LinkTransport transport) {
  constexpr int kHosts = 2;
  constexpr int kWorld = 4;
  constexpr int kSteps = 4;
  Job job(kHosts, kWorld, transport);
  BOOST_TEST_REQUIRE(job.groups.has_value());
  std::vector<std::vector<float>> params(kWorld, std::vector<float>(kParams, 0.0f));
  std::vector<std::vector<int>> agreed(kWorld);  // per step: the reason's number, -1 for none
  std::vector<std::uint64_t> sent(kWorld);
  const std::vector<Status> status = testing::RunRanks(kWorld, [&](int r) -> Status {
    Result<std::unique_ptr<HierarchicalSyncStrategy>> sync = MakeHierarchicalSync(
        *job.groups, job.JoinOf(r), optim::MakeOptimizer({}, 0, kParams), 0.0f);
    if (!sync.ok()) return sync.status();
    std::vector<float> grad(kParams + sync.value()->GradientTail());
    for (int step = 0; step < kSteps; ++step) {
      if (r == 3 && step == 1) sync.value()->ProposeStop(train::StopReason::kTargetReached);
      if (r == 0 && step == 3) sync.value()->ProposeStop(train::StopReason::kRequested);
      const std::vector<float> mine = testing::Input(r, kParams, static_cast<std::uint32_t>(step));
      std::copy(mine.begin(), mine.end(), grad.begin());
      const std::span<float> g = std::span<float>(grad).first(kParams);
      Status s =
          sync.value()->Apply(step, params[static_cast<std::size_t>(r)], g, kLr, {1, kWorld});
      if (!s.ok()) return s;
      const std::optional<train::StopReason> stop = sync.value()->AgreedStop();
      agreed[static_cast<std::size_t>(r)].push_back(stop ? static_cast<int>(*stop) : -1);
    }
    sent[static_cast<std::size_t>(r)] = sync.value()->Stats().bytes_sent;
    return Status::Ok();
  });
  // The SGD step's sum of means, computed exactly, and a bound on the float sums' error.
  std::vector<double> expected(kParams, 0.0), tolerance(kParams, 0.0);
  for (int step = 0; step < kSteps; ++step) {
    const testing::Reference mean =
        testing::ReferenceSum(kWorld, kParams, static_cast<std::uint32_t>(step));
    for (std::size_t f = 0; f < kParams; ++f) {
      expected[f] -= kLr * mean.sum[f] / kWorld;
      tolerance[f] += kLr * (mean.tolerance[f] / kWorld + std::fabs(mean.sum[f]) * 0x1p-22);
    }
  }
  for (int r = 0; r < kWorld; ++r) {
    BOOST_TEST_CONTEXT("rank " << r) {
      BOOST_TEST_REQUIRE(status[static_cast<std::size_t>(r)].ok(),
                         status[static_cast<std::size_t>(r)].message());
      BOOST_TEST(testing::SameBits(params[static_cast<std::size_t>(r)], params[0]));
      const std::vector<int> want{-1, static_cast<int>(train::StopReason::kTargetReached), -1,
                                  static_cast<int>(train::StopReason::kRequested)};
      BOOST_TEST(agreed[static_cast<std::size_t>(r)] == want, boost::test_tools::per_element());
      // Each step, its chunk of the gradient and the votes (half each, 2 hosts) across hosts.
      const std::size_t chunk = ShardRangeOf(kParams + HierarchicalSyncStrategy::kVoteFloats, 2,
                                             job.groups->LocalIndex(r))
                                    .size();
      BOOST_TEST(sent[static_cast<std::size_t>(r)] == kSteps * chunk * sizeof(float));
    }
  }
  std::size_t outside = 0;
  for (std::size_t f = 0; f < kParams; ++f) {
    if (std::fabs(params[0][f] - expected[f]) > tolerance[f] + 1e-6) ++outside;
  }
  BOOST_TEST(outside == 0u);
}

BOOST_AUTO_TEST_SUITE(dist_hierarchical_sync)

// kAuto: every link of this one process is shared memory, the rings across "hosts" too.
BOOST_AUTO_TEST_CASE(replicas_step_alike_by_the_mean_and_agree_on_votes) {
  for (LinkTransport transport : {LinkTransport::kTcp, LinkTransport::kAuto}) {
    BOOST_TEST_CONTEXT((transport == LinkTransport::kTcp ? "tcp" : "auto")) {
      CheckReplicasStepAlike(transport);
    }
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
