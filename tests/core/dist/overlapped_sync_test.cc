// Overlapped sync (OverlappedSyncStrategy): the buckets are whole layers, last first; replicas that
// average their gradients bucket by bucket during the pass end bitwise identical to each other,
// equal (within float tolerance) to one replica with the whole global batch, and with two replicas
// bit for bit equal to the whole-gradient exchange; a peer that hangs up fails the step.
#include <boost/test/unit_test.hpp>
#include <thread>
#include <vector>

#include "core/dist/gradient_buckets.h"
#include "core/dist/loopback_ring.h"
#include "core/dist/overlapped_sync_strategy.h"
#include "core/dist/sync_strategy.h"
#include "core/math/gemm.h"
#include "replica_harness.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace overlapped_sync_test {

using testing::Blobs;
using testing::GlobalBatchOptions;
using testing::MaxRelativeDifference;
using testing::TrainReplicasAsThreads;

const optim::OptimizerOptions kMomentum = testing::OptimizerOfType(optim::OptimizerType::kMomentum);
constexpr int kBatch = 16;

train::TrainOptions PerReplica(int rank, int world) {
  return GlobalBatchOptions(kBatch, rank, world);
}

// SmallSpec's buckets: one per layer with parameters.
std::vector<GradientBucket> LayerBuckets(const model::Model& model) {
  return PlanBuckets(LayerStarts(model), model.NumParams(), 1);
}

BOOST_AUTO_TEST_SUITE(dist_overlapped_sync)

BOOST_AUTO_TEST_CASE(buckets_are_whole_layers_from_the_last_until_they_are_large_enough) {
  // Layers of 100, 50, 30 and 20 floats.
  const std::vector<std::size_t> starts = {0, 100, 150, 180};
  using B = std::vector<GradientBucket>;
  BOOST_TEST((PlanBuckets(starts, 200, 1) == B{{180, 200}, {150, 180}, {100, 150}, {0, 100}}));
  // At least 45 floats: 20 + 30, then 50, then what is left.
  BOOST_TEST((PlanBuckets(starts, 200, 45) == B{{150, 200}, {100, 150}, {0, 100}}));
  // A bucket larger than the layers above the first: the first layer's bucket takes them.
  BOOST_TEST((PlanBuckets(starts, 200, 120) == B{{0, 200}}));
  BOOST_TEST((PlanBuckets(starts, 200, 0) == B{{0, 200}}));
  BOOST_TEST(PlanBuckets(starts, 0, 1).empty());
}

BOOST_AUTO_TEST_CASE(overlapped_replicas_match_one_replica_with_n_times_the_batch) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(1000);
  const model::Model model(testing::SmallSpec());
  BOOST_TEST_REQUIRE(LayerBuckets(model).size() == 2u);
  const auto overlapped = [&](RingAllReduce& ring, int, int, std::size_t n) {
    return std::unique_ptr<train::Strategy>(std::make_unique<OverlappedSyncStrategy>(
        ring, LayerBuckets(model), optim::MakeOptimizer(kMomentum, 0, n), 1.0f));
  };
  for (int world : {2, 3, 4}) {
    BOOST_TEST_CONTEXT("world " << world) {
      train::LocalStrategy single(optim::MakeOptimizer(kMomentum, 0, model.NumParams()), 1.0f);
      const Result<std::vector<float>> reference =
          testing::TrainWithStrategy(model, set, GlobalBatchOptions(kBatch * world, 0, 1), single);
      BOOST_REQUIRE(reference.ok());
      auto finals = TrainReplicasAsThreads(model, set, world, PerReplica, overlapped);
      for (int r = 0; r < world; ++r) {
        BOOST_REQUIRE_MESSAGE(finals[r].ok(), finals[r].status().message());
      }
      for (int r = 1; r < world; ++r) {
        BOOST_TEST((finals[r].value() == finals[0].value()), "rank " << r << " differs");
      }
      BOOST_TEST(MaxRelativeDifference(finals[0].value(), reference.value()) < 1e-5);
    }
  }
}

BOOST_AUTO_TEST_CASE(two_overlapped_replicas_compute_the_whole_gradient_exchanges_bits) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(1000);
  const model::Model model(testing::SmallSpec());
  const auto overlapped = [&](RingAllReduce& ring, int, int, std::size_t n) {
    return std::unique_ptr<train::Strategy>(std::make_unique<OverlappedSyncStrategy>(
        ring, LayerBuckets(model), optim::MakeOptimizer(kMomentum, 0, n), 1.0f));
  };
  const auto whole = [](RingAllReduce& ring, int, int, std::size_t n) {
    return std::unique_ptr<train::Strategy>(
        std::make_unique<SyncAllReduceStrategy>(ring, optim::MakeOptimizer(kMomentum, 0, n), 1.0f));
  };
  auto a = TrainReplicasAsThreads(model, set, 2, PerReplica, overlapped);
  auto b = TrainReplicasAsThreads(model, set, 2, PerReplica, whole);
  BOOST_REQUIRE(a[0].ok());
  BOOST_REQUIRE(b[0].ok());
  BOOST_TEST((a[0].value() == b[0].value()));
}

BOOST_AUTO_TEST_CASE(a_peer_that_hangs_up_fails_the_step_and_names_it) {
  Result<std::vector<RingLinks>> links = LoopbackRing::ConnectAll(2, std::chrono::seconds(10));
  BOOST_REQUIRE(links.ok());
  const std::vector<GradientBucket> buckets = {{6, 10}, {0, 6}};
  std::vector<float> grad(10 + VotingAllReduce::kVoteFloats, 1.0f), params(10, 0.0f);
  RingAllReduce ring(0, 2, links.value()[0].left, links.value()[0].right,
                     {.timeout = std::chrono::seconds(20)});
  OverlappedSyncStrategy sync(ring, buckets, optim::MakeOptimizer(kMomentum, 0, 10), 0.0f);
  links.value()[1].owned.clear();  // rank 1 hangs up
  const std::span<float> g(grad.data(), 10);
  train::PassExchange* pass = sync.DuringPass();
  BOOST_REQUIRE(pass != nullptr);
  pass->Start(0, g, {1, 2}, false);
  pass->Finished(6);
  const Status applied = sync.Apply(0, params, g, 0.1f, {1, 2});
  BOOST_TEST(!applied.ok());
  BOOST_TEST(applied.message().find("step 0") != std::string::npos, applied.message());
  BOOST_TEST(applied.message().find("rank 1") != std::string::npos, applied.message());
  // The ring refuses later steps at once.
  pass->Start(1, g, {1, 2}, false);
  BOOST_TEST(!sync.Apply(1, params, g, 0.1f, {1, 2}).ok());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace overlapped_sync_test
}  // namespace dtrain::dist
