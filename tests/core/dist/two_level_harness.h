// Test helpers for two-level rings (TwoLevelRing): a job of ranks as threads of this process,
// told apart into hosts by a plan from made-up host keys (round robin, as the daemon places them),
// each rank with its own loopback listener.
//
//   Job job(/*hosts=*/2, /*world=*/4, LinkTransport::kAuto);
//   Result<std::unique_ptr<TwoLevelRing>> rings = MakeTwoLevelRing(*job.groups, job.JoinOf(r));
//   Status s = StepAsTrainer(*sync, {.rank = r, .world = 4, .step = step}, input, grad, buckets,
//                            params, agreed);
#pragma once

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <optional>
#include <span>
#include <vector>

#include "core/dist/gradient_buckets.h"
#include "core/dist/host_groups.h"
#include "core/dist/two_level_ring.h"
#include "core/train/strategy.h"

namespace dtrain::dist::testing {

// The plan for `world` ranks placed round robin on `hosts` made-up hosts.
inline std::optional<HostGroups> PlanOf(int hosts, int world) {
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
            .deadline = Clock::now() + std::chrono::seconds(20),
            .token = "",
            .transport = transport,
            .ring_options = {.timeout = std::chrono::seconds(20)}};
  }
  LinkTransport transport;
  std::optional<HostGroups> groups;
  std::vector<PeerListener> listeners;
  std::vector<Endpoint> endpoints;
};

// How a replica hands over its gradient: whole after its pass, or bucket by bucket during it.
enum class Exchange { kWhole, kBuckets };

// The learning rate of StepAsTrainer's steps.
inline constexpr float kTrainerLr = 0.5f;

// Which replica takes which step of `world`.
struct StepOf {
  int rank = 0, world = 1, step = 0;
};

// One step of a replica as a trainer takes it, by a strategy: replica world-1 proposes a stop at
// step 1 and replica 0 at step 3; the pass (where the strategy exchanges during it) starts, the
// gradient `input` is written into `grad` and `buckets` finish in order; Apply with kTrainerLr
// and an equal share; the agreed stop's number (-1 for none) is appended to `agreed`.
inline Status StepAsTrainer(train::Strategy& sync, StepOf at, std::span<const float> input,
                            std::span<float> grad, std::span<const GradientBucket> buckets,
                            std::span<float> params, std::vector<int>& agreed) {
  if (at.rank == at.world - 1 && at.step == 1) sync.ProposeStop(train::StopReason::kTargetReached);
  if (at.rank == 0 && at.step == 3) sync.ProposeStop(train::StopReason::kRequested);
  train::PassExchange* pass = sync.DuringPass();
  const train::StepShare share{1, static_cast<std::size_t>(at.world)};
  if (pass != nullptr) pass->Start(at.step, grad, share, false);
  std::copy(input.begin(), input.end(), grad.begin());
  if (pass != nullptr) {
    for (const GradientBucket& bucket : buckets) pass->Finished(bucket.begin);
  }
  if (Status s = sync.Apply(at.step, params, grad, kTrainerLr, share); !s.ok()) return s;
  const std::optional<train::StopReason> stop = sync.AgreedStop();
  agreed.push_back(stop ? static_cast<int>(*stop) : -1);
  return Status::Ok();
}

// The agreement StepAsTrainer's votes give over steps 0-3.
inline std::vector<int> AgreedVotes() {
  return {-1, static_cast<int>(train::StopReason::kTargetReached), -1,
          static_cast<int>(train::StopReason::kRequested)};
}

}  // namespace dtrain::dist::testing
