// mode = "sync" with gradient compression over a ring (CompressedSyncStrategy): replicas as
// threads over in-process links. Whatever the method, every replica ends with the same bits; a
// warm-up as long as the run is the uncompressed ring to the bit; PowerSGD's passes shared with a
// team of threads give one thread's bits; the compressor's state is gathered to rank 0 for a
// checkpoint and taken back by each replica.
#include <boost/test/unit_test.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "compression_harness.h"
#include "core/compress/compression_plan.h"
#include "core/dist/compressed_sync_strategy.h"
#include "core/dist/sync_strategy.h"
#include "core/math/gemm.h"
#include "core/math/thread_team.h"
#include "replica_harness.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace compressed_sync_test {

using testing::Blobs;
using testing::CompressedSync;
using testing::Finals;
using testing::kMomentum;
using testing::OneEpochPerReplica;
using testing::TrainReplicasAsThreads;
using testing::WideSpec;
constexpr const auto& kMethods = testing::kLossyMethods;

BOOST_AUTO_TEST_SUITE(dist_compressed_sync)

BOOST_AUTO_TEST_CASE(every_method_leaves_every_replica_with_the_same_bits) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(960);
  const model::Model model(WideSpec());
  for (const compress::Settings& settings : kMethods) {
    for (int world : {2, 3, 4}) {
      BOOST_TEST_CONTEXT(compress::MethodName(settings.method) << ", world " << world) {
        const auto finals = Finals(TrainReplicasAsThreads(model, set, world, OneEpochPerReplica,
                                                          CompressedSync(model, settings)));
        for (int r = 1; r < world; ++r) {
          BOOST_TEST((finals[r] == finals[0]), "rank " << r << " differs from rank 0");
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_warm_up_as_long_as_the_run_is_the_uncompressed_ring_to_the_bit) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(960);
  const model::Model model(WideSpec());
  const auto sync = Finals(TrainReplicasAsThreads(
      model, set, 3, OneEpochPerReplica, [](RingAllReduce& ring, int, int, std::size_t n) {
        return std::make_unique<SyncAllReduceStrategy>(ring, optim::MakeOptimizer(kMomentum, 0, n),
                                                       1.0f);
      }));
  for (compress::Settings settings : kMethods) {
    settings.warmup_steps = 1'000'000;
    BOOST_TEST_CONTEXT(compress::MethodName(settings.method)) {
      const auto warm = Finals(TrainReplicasAsThreads(model, set, 3, OneEpochPerReplica,
                                                      CompressedSync(model, settings)));
      BOOST_TEST((warm[0] == sync[0]));
    }
  }
}

BOOST_AUTO_TEST_CASE(powersgd_replicas_on_teams_of_threads_end_with_one_threads_bits) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(960);
  const model::Model model(WideSpec());
  const compress::Settings settings{.method = compress::Method::kPowerSgd, .rank = 2};
  constexpr int kWorld = 2;
  const auto alone = Finals(TrainReplicasAsThreads(model, set, kWorld, OneEpochPerReplica,
                                                   CompressedSync(model, settings)));
  std::vector<std::unique_ptr<math::ThreadTeam>> teams;
  for (int r = 0; r < kWorld; ++r) teams.push_back(std::make_unique<math::ThreadTeam>(3));
  const auto shared = Finals(TrainReplicasAsThreads(
      model, set, kWorld, OneEpochPerReplica,
      [&](RingAllReduce& ring, int rank, int world, std::size_t n) {
        auto strategy = CompressedSync(model, settings)(ring, rank, world, n);
        strategy->ShareThreads(*teams[static_cast<std::size_t>(rank)]);
        return strategy;
      }));
  for (int r = 0; r < kWorld; ++r) BOOST_TEST((shared[r] == alone[r]), "rank " << r);
}

// Rank r of `world` takes `steps` compressed steps of its own gradients, then hands over its
// compressor's state; returns what CheckpointState gave each rank.
std::vector<std::vector<std::vector<float>>> StateAfterSteps(const model::Model& model, int world,
                                                             const compress::Settings& settings,
                                                             int steps) {
  std::vector<std::vector<std::vector<float>>> states(static_cast<std::size_t>(world));
  testing::ApplyInputsOnRanks<train::Strategy>(
      world, model.NumParams(), steps, 0.01f,
      [&](RingAllReduce& ring, int r) {
        return CompressedSync(model, settings)(ring, r, world, model.NumParams());
      },
      [&](int r, train::Strategy& strategy, std::span<const float>) {
        Result<std::vector<std::vector<float>>> state = strategy.CheckpointState();
        if (!state.ok()) return state.status();
        states[static_cast<std::size_t>(r)] = std::move(state).value();
        return Status::Ok();
      });
  return states;
}

BOOST_AUTO_TEST_CASE(rank_0_gets_every_replicas_residual_and_each_replica_takes_back_its_own) {
  math::SetBlasThreads(1);
  const model::Model model(WideSpec());
  const compress::Settings settings{.method = compress::Method::kPowerSgd, .rank = 2};
  const int world = 3;
  const auto states = StateAfterSteps(model, world, settings, 3);
  // Rank 0: three residuals (they differ: each replica's gradients did), then one Q.
  BOOST_REQUIRE_EQUAL(states[0].size(), 4u);
  for (int r = 0; r < world; ++r) BOOST_TEST(states[0][r].size() == model.NumParams());
  BOOST_TEST((states[0][0] != states[0][1]));
  BOOST_TEST(states[1].empty());
  BOOST_TEST(states[2].empty());

  // Replica 1 restored from them holds replica 1's residual (and the shared Q).
  std::vector<RingLinks> links = MakeLocalRing(world);
  RingAllReduce ring(1, world, links[1].left, links[1].right);
  auto restored = CompressedSync(model, settings)(ring, 1, world, model.NumParams());
  std::vector<std::span<const float>> views(states[0].begin(), states[0].end());
  BOOST_REQUIRE(restored->RestoreState(views).ok());
  auto& compressed = dynamic_cast<CompressedSyncStrategy&>(*restored);
  const std::vector<std::span<float>> own = compressed.compressor().StateVectors();
  BOOST_TEST((std::vector<float>(own[0].begin(), own[0].end()) == states[0][1]));
  BOOST_TEST((std::vector<float>(own[1].begin(), own[1].end()) == states[0][3]));

  views.pop_back();
  const Status refused = restored->RestoreState(views);
  BOOST_TEST(!refused.ok());
  BOOST_TEST(refused.message().find("holds 3 compression state vectors") != std::string::npos,
             refused.message());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace compressed_sync_test
}  // namespace dtrain::dist
