// mode = "sync" with every replica on one host: gradients shared in memory (HostSyncStrategy).
// Replicas end bitwise identical and equal (within float tolerance) to one replica on the same
// global batches; MakeSyncStrategy keeps the ring where the links are not shared memory; a replica
// that dies or stalls fails the others' step, naming it.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/text_checks.h"
#include "core/dist/host_sync_strategy.h"
#include "core/dist/loopback_ring.h"
#include "core/dist/sync_strategy.h"
#include "core/math/gemm.h"
#include "replica_harness.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace host_sync_test {

using namespace std::chrono_literals;
using testing::Blobs;
using testing::GlobalBatchOptions;
using testing::MaxRelativeDifference;
using testing::Mentions;

constexpr int kBatch = 16;
const optim::OptimizerOptions kAdam = testing::OptimizerOfType(optim::OptimizerType::kAdam);

// One replica with batch world * kBatch, the same global batches; clipped at `clip`.
std::vector<float> Reference(const model::Model& model, const data::Dataset& set, int world,
                             float clip) {
  train::LocalStrategy single(optim::MakeOptimizer(kAdam, 0, model.NumParams()), clip);
  Result<std::vector<float>> params =
      testing::TrainWithStrategy(model, set, GlobalBatchOptions(kBatch * world, 0, 1), single);
  BOOST_REQUIRE(params.ok());
  return std::move(params).value();
}

struct Trained {
  Status status;
  bool shared = false;  // the strategy was a HostSyncStrategy
  std::vector<float> params;
  std::vector<float> state;  // the optimizer's state vectors, one after another: a checkpoint's
};

// Trains `world` replicas as threads over a loopback ring of `transport`, each with the strategy
// MakeSyncStrategy picks, or with `ring` the ring all-reduce's.
std::vector<Trained> TrainWithMadeStrategy(const model::Model& model, const data::Dataset& set,
                                           int world, LinkTransport transport, float clip,
                                           bool ring_only = false) {
  Result<LoopbackRing> ring = LoopbackRing::Listen(world, transport);
  BOOST_REQUIRE(ring.ok());
  std::vector<Trained> out(static_cast<std::size_t>(world));
  testing::RunRanks(world, [&](int r) {
    Trained& t = out[static_cast<std::size_t>(r)];
    Result<RingLinks> links = ring.value().Join(r, 20s);
    if (!links.ok()) return t.status = links.status();
    RingAllReduce allreduce(r, world, links.value().left, links.value().right);
    auto optimizer = optim::MakeOptimizer(kAdam, 0, model.NumParams());
    Result<std::unique_ptr<train::Strategy>> sync =
        ring_only
            ? Result<std::unique_ptr<train::Strategy>>(
                  std::make_unique<SyncAllReduceStrategy>(allreduce, std::move(optimizer), clip))
            : MakeSyncStrategy(allreduce, links.value(), std::move(optimizer), clip, 20s);
    if (!sync.ok()) return t.status = sync.status();
    t.shared = dynamic_cast<HostSyncStrategy*>(sync.value().get()) != nullptr;
    Result<std::vector<float>> params =
        testing::TrainWithStrategy(model, set, GlobalBatchOptions(kBatch, r, world), *sync.value());
    if (!params.ok()) return t.status = params.status();
    t.params = std::move(params).value();
    for (std::span<const float> v : sync.value()->LocalOptimizer()->StateVectors()) {
      t.state.insert(t.state.end(), v.begin(), v.end());
    }
    return t.status = Status::Ok();
  });
  return out;
}

BOOST_AUTO_TEST_SUITE(host_sync)

BOOST_AUTO_TEST_CASE(replicas_sharing_gradients_compute_the_rings_bits) {
  // Equal to one replica on the global batch within rounding, and to the ring bit for bit (the
  // same sums in the same order), with and without clipping; each replica's optimizer state (what
  // a checkpoint holds) is the ring replica's whole state, though each stepped only its part.
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(1000);
  const model::Model model(testing::SmallSpec());
  for (float clip : {0.0f, 0.5f}) {  // 0.5 clips most steps of this problem
    for (int world : {2, 3, 4}) {
      BOOST_TEST_CONTEXT("world " << world << ", clip " << clip) {
        const std::vector<float> reference = Reference(model, set, world, clip);
        const std::vector<Trained> finals =
            TrainWithMadeStrategy(model, set, world, LinkTransport::kAuto, clip);
        for (int r = 0; r < world; ++r) {
          const Trained& t = finals[static_cast<std::size_t>(r)];
          BOOST_TEST_REQUIRE(t.status.ok(), t.status.message());
          BOOST_TEST(t.shared, "rank " << r << " did not share its gradients");
          BOOST_TEST((t.params == finals[0].params), "rank " << r << " differs from rank 0");
        }
        BOOST_TEST(MaxRelativeDifference(finals[0].params, reference) < 1e-5);
        const std::vector<Trained> ring =
            TrainWithMadeStrategy(model, set, world, LinkTransport::kAuto, clip, true);
        BOOST_TEST_REQUIRE(ring[0].status.ok(), ring[0].status.message());
        BOOST_TEST(!ring[0].shared);
        BOOST_TEST((finals[0].params == ring[0].params), "shared gradients vs the ring");
        BOOST_TEST(!ring[0].state.empty());
        for (const Trained& t : finals) BOOST_TEST((t.state == ring[0].state), "optimizer state");
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(replicas_with_running_statistics_keep_their_own_parameters) {
  // Batchnorm's running statistics are each replica's, so the trainer keeps its own parameters
  // and each replica steps all of them: still the ring's bits, replica by replica.
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(480);
  const model::Model model(testing::BatchNormSpec());
  BOOST_TEST_REQUIRE(model.StatisticRanges().size() == 1u);
  const model::ParamRange stats = model.StatisticRanges().front();
  const std::vector<Trained> shared = TrainWithMadeStrategy(model, set, 2, LinkTransport::kAuto, 0);
  const std::vector<Trained> ring =
      TrainWithMadeStrategy(model, set, 2, LinkTransport::kAuto, 0, true);
  for (int r = 0; r < 2; ++r) {
    const auto i = static_cast<std::size_t>(r);
    BOOST_TEST_REQUIRE(shared[i].status.ok(), shared[i].status.message());
    BOOST_TEST_REQUIRE(ring[i].status.ok(), ring[i].status.message());
    BOOST_TEST(shared[i].shared);
    BOOST_TEST((shared[i].params == ring[i].params), "rank " << r << " vs the ring");
    BOOST_TEST((shared[i].state == ring[i].state), "rank " << r << "'s optimizer state");
  }
  // Their own statistics: each saw other rows.
  BOOST_TEST(shared[0].params[stats.offset] != shared[1].params[stats.offset]);
}

BOOST_AUTO_TEST_CASE(links_that_are_not_shared_memory_keep_the_ring) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(1000);
  const model::Model model(testing::SmallSpec());
  const std::vector<Trained> finals =
      TrainWithMadeStrategy(model, set, 2, LinkTransport::kTcp, 0.0f);
  const std::vector<float> reference = Reference(model, set, 2, 0.0f);
  for (const Trained& t : finals) {
    BOOST_TEST_REQUIRE(t.status.ok(), t.status.message());
    BOOST_TEST(!t.shared);
  }
  BOOST_TEST((finals[1].params == finals[0].params));
  BOOST_TEST(MaxRelativeDifference(finals[0].params, reference) < 1e-5);
}

BOOST_AUTO_TEST_CASE(stop_votes_reach_every_replica_at_the_same_step) {
  // Rank 1 asks to stop for the target at step 3; ranks 0 and 2 ask at step 6, rank 2 because
  // the user requested it, which wins.
  constexpr int kWorld = 3;
  constexpr std::size_t kParams = 300;
  Result<LoopbackRing> ring = LoopbackRing::Listen(kWorld, LinkTransport::kAuto);
  BOOST_REQUIRE(ring.ok());
  // What AgreedStop() said after each step: the reason's number, -1 for none.
  std::vector<std::vector<int>> agreed(kWorld);
  const std::vector<Status> status = testing::RunRanks(kWorld, [&](int r) -> Status {
    Result<RingLinks> links = ring.value().Join(r, 20s);
    if (!links.ok()) return links.status();
    RingAllReduce allreduce(r, kWorld, links.value().left, links.value().right);
    Result<std::unique_ptr<train::Strategy>> sync =
        MakeSyncStrategy(allreduce, links.value(), optim::MakeOptimizer({}, 0, kParams), 0.0f, 20s);
    if (!sync.ok()) return sync.status();
    if (dynamic_cast<HostSyncStrategy*>(sync.value().get()) == nullptr) {
      return Status::Error("not shared");
    }
    std::vector<float> params(kParams, 0.0f);
    const std::span<float> grad =
        sync.value()->GradientStorage(kParams + HostSyncStrategy::kVoteFloats).first(kParams);
    for (int step = 0; step < 8; ++step) {
      if (r == 1 && step == 3) sync.value()->ProposeStop(train::StopReason::kTargetReached);
      if (r == 0 && step == 6) sync.value()->ProposeStop(train::StopReason::kTargetReached);
      if (r == 2 && step == 6) sync.value()->ProposeStop(train::StopReason::kRequested);
      std::fill(grad.begin(), grad.end(), static_cast<float>(r));
      Status s = sync.value()->Apply(step, params, grad, 0.1f, {1, kWorld});
      if (!s.ok()) return s;
      const std::optional<train::StopReason> stop = sync.value()->AgreedStop();
      agreed[static_cast<std::size_t>(r)].push_back(stop ? static_cast<int>(*stop) : -1);
    }
    return Status::Ok();
  });
  for (int r = 0; r < kWorld; ++r) {
    BOOST_TEST_CONTEXT("rank " << r) {
      BOOST_TEST_REQUIRE(status[static_cast<std::size_t>(r)].ok(),
                         status[static_cast<std::size_t>(r)].message());
      const auto& votes = agreed[static_cast<std::size_t>(r)];
      for (int step = 0; step < 8; ++step) {
        const int want = step == 3   ? static_cast<int>(train::StopReason::kTargetReached)
                         : step == 6 ? static_cast<int>(train::StopReason::kRequested)
                                     : -1;
        BOOST_TEST(votes[static_cast<std::size_t>(step)] == want, "step " << step);
      }
    }
  }
}

// Rank `r` of `world` forked processes calls Apply with a constant gradient `steps` times (the
// rank `victim` SIGKILLs itself before step `kill_at`, or sleeps `stall` first); each survivor
// writes its first error (or "ok") to its pipe.
std::vector<std::string> ApplyInProcesses(int world, int victim, int kill_at,
                                          std::chrono::milliseconds stall,
                                          std::chrono::milliseconds timeout) {
  Result<LoopbackRing> ring = LoopbackRing::Listen(world, LinkTransport::kAuto);
  BOOST_REQUIRE(ring.ok());
  constexpr std::size_t kParams = 1000;
  const std::vector<testing::ForkedRank> ranks = testing::ForkRanks(world, [&](int r, int fd) {
    std::string result = "ok";
    Result<RingLinks> links = ring.value().Join(r, 20s);
    if (!links.ok()) return 2;
    RingAllReduce allreduce(r, world, links.value().left, links.value().right);
    Result<std::unique_ptr<train::Strategy>> sync = MakeSyncStrategy(
        allreduce, links.value(), optim::MakeOptimizer({}, 0, kParams), 0.0f, timeout);
    if (!sync.ok() || dynamic_cast<HostSyncStrategy*>(sync.value().get()) == nullptr) return 3;
    std::vector<float> params(kParams, 1.0f);
    const std::span<float> grad =
        sync.value()->GradientStorage(kParams + HostSyncStrategy::kVoteFloats).first(kParams);
    for (int step = 0; step < 20 && result == "ok"; ++step) {
      if (r == victim && step == kill_at) {
        if (stall.count() == 0) ::raise(SIGKILL);
        std::this_thread::sleep_for(stall);
      }
      std::fill(grad.begin(), grad.end(), 0.5f);
      Status s =
          sync.value()->Apply(step, params, grad, 0.1f, {1, static_cast<std::size_t>(world)});
      if (!s.ok()) result = s.message();
    }
    return dtrain::testing::WriteAll(fd, result.data(), result.size()) ? 0 : 4;
  });
  std::vector<std::string> results;
  for (const testing::ForkedRank& rank : ranks) results.push_back(rank.output);
  return results;
}

BOOST_AUTO_TEST_CASE(a_replica_killed_mid_training_fails_every_other_replica_naming_it) {
  // Four ranks: ranks 1 and 3 are rank 2's ring neighbours and see its links hang up; rank 0
  // learns it from the flag they set in the segment. Long before the 20 s timeout.
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::string> results = ApplyInProcesses(4, 2, 5, 0ms, 20s);
  BOOST_TEST(testing::SecondsSince(start) < 15.0, "the survivors waited for the timeout");
  for (int r : {0, 1, 3}) {
    const std::string& got = results[static_cast<std::size_t>(r)];
    BOOST_TEST_CONTEXT("rank " << r << ": " << got) {
      BOOST_TEST(got.starts_with("step 5: "));
      BOOST_TEST((Mentions(got, "closed") || Mentions(got, "rank 2 failed")));
      BOOST_TEST(!Mentions(got, "timeout"));
    }
  }
  BOOST_TEST(results[2].empty());  // killed before it could write
}

BOOST_AUTO_TEST_CASE(a_replica_that_stalls_past_the_timeout_is_named) {
  const std::vector<std::string> results = ApplyInProcesses(2, 1, 3, 1500ms, 300ms);
  BOOST_TEST(results[0] == "step 3: timeout: rank 1 did not reach the step within 300 ms",
             results[0]);
  BOOST_TEST(results[1] != "ok");  // it comes back to a failed job
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace host_sync_test
}  // namespace dtrain::dist
