// A compressed sync-ps job's residuals in checkpoints (sync_ps_strategy.h, ps_protocol.md
// "Residuals"): a checkpoint one replica proposes rides on its push and every replica learns of it
// after the same step; then every replica hands its residual to the shards and rank 0 receives all
// of them, each the very residual that replica's pushes left; restored, each replica takes its own
// back; a checkpoint without residuals restores them as zero, and one of another shape is
// refused; a replica that sends no residual fails the checkpoint, naming it.
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/compress/gradient_compressor.h"
#include "core/dist/push_codec.h"
#include "core/dist/sync_ps_strategy.h"
#include "replica_harness.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace ps_residuals_test {

constexpr std::size_t kParams = 1001;
constexpr int kWorkers = 2;
constexpr int kShards = 2;
constexpr std::int64_t kSteps = 3;
const compress::Settings kBf16{.method = compress::Method::kBf16};
const compress::Settings kTopK{.method = compress::Method::kTopK, .fraction = 0.05};

// Replica `rank`'s gradient of `step`.
std::vector<float> Gradient(int rank, std::int64_t step) {
  return testing::Input(rank, kParams, static_cast<std::uint32_t>(step));
}

// Sync SGD shards over kParams parameters starting at zero.
std::vector<std::unique_ptr<ParameterShard>> Shards() {
  std::vector<std::unique_ptr<ParameterShard>> shards;
  const std::vector<ShardRange> ranges = ShardRanges(kParams, kShards);
  for (int k = 0; k < kShards; ++k) {
    const ShardRange& r = ranges[static_cast<std::size_t>(k)];
    shards.push_back(std::make_unique<ParameterShard>(ShardOptions{.shard = k,
                                                                   .shards = kShards,
                                                                   .begin = r.begin,
                                                                   .end = r.end,
                                                                   .num_params = kParams,
                                                                   .workers = kWorkers,
                                                                   .mode = PsMode::kSync,
                                                                   .optimizer = {}}));
  }
  return shards;
}

// What replica `rank`'s residual is after pushing its gradients of steps [0, steps), by a
// compressor of its own.
std::vector<float> ExpectedResidual(const compress::Settings& settings, int rank,
                                    std::int64_t steps) {
  compress::GradientCompressor alone(PlanPushes(ShardRanges(kParams, kShards), settings), settings,
                                     0);
  std::vector<float> messages(compress::PlanSentFloats(alone.plan()));
  for (std::int64_t step = 0; step < steps; ++step) alone.Encode(Gradient(rank, step), messages);
  const std::span<const float> residual = alone.StateVectors().front();
  return {residual.begin(), residual.end()};
}

// One replica's view of a run: whether a checkpoint was agreed after each step, and what
// CheckpointState gave it.
struct ReplicaRun {
  std::vector<bool> agreed;
  Result<std::vector<std::vector<float>>> state = Status::Error("not run");
};

// kWorkers compressing replicas push kSteps steps (replica 1 proposes a checkpoint before step 1),
// starting from `restored` (RestoreState's vectors, when not empty), then take CheckpointState.
std::vector<ReplicaRun> Run(const compress::Settings& settings,
                            const std::vector<std::span<const float>>& restored = {},
                            std::int64_t steps = kSteps) {
  const testing::PsLinks links = testing::MakeLocalPsLinks(kWorkers, kShards);
  auto shards = Shards();
  std::vector<ReplicaRun> runs(kWorkers);
  const std::vector<Status> served =
      testing::ServePs(links, shards, [&](int rank, std::span<Link* const> mine) {
        ReplicaRun& run = runs[static_cast<std::size_t>(rank)];
        SyncPsStrategy ps(mine, kParams,
                          {.rank = rank, .workers = kWorkers, .compression = settings});
        std::vector<float> params(kParams);
        Status s = ps.RestoreState(restored);
        if (s.ok()) s = ps.Connect(params, 0);
        for (std::int64_t step = 0; s.ok() && step < steps; ++step) {
          if (rank == 1 && step == 1) ps.ProposeCheckpoint();
          std::vector<float> grad = Gradient(rank, step);
          s = ps.Apply(step, params, grad, 0.1f, {.rows = 1, .total_rows = kWorkers});
          run.agreed.push_back(ps.CheckpointAgreed());
        }
        run.state = s.ok() ? ps.CheckpointState() : Result<std::vector<std::vector<float>>>(s);
      });
  for (const Status& s : served) BOOST_REQUIRE_MESSAGE(s.ok(), s.message());
  for (const ReplicaRun& run : runs) {
    BOOST_REQUIRE_MESSAGE(run.state.ok(), run.state.status().message());
  }
  return runs;
}

BOOST_AUTO_TEST_SUITE(dist_ps_residuals)

BOOST_AUTO_TEST_CASE(rank_0_receives_every_replicas_residual_after_the_agreed_step) {
  for (const compress::Settings& settings : {kBf16, kTopK}) {
    BOOST_TEST_CONTEXT(compress::MethodName(settings.method)) {
      const std::vector<ReplicaRun> runs = Run(settings);
      // Replica 1's proposal rode on its push of step 1: both learn of it after that step only.
      const std::vector<bool> agreed = {false, true, false};
      for (const ReplicaRun& run : runs) BOOST_TEST((run.agreed == agreed));
      const std::vector<std::vector<float>>& all = runs[0].state.value();
      BOOST_REQUIRE_EQUAL(all.size(), static_cast<std::size_t>(kWorkers));
      for (int r = 0; r < kWorkers; ++r) {
        BOOST_TEST((all[static_cast<std::size_t>(r)] == ExpectedResidual(settings, r, kSteps)),
                   "worker rank " << r);
      }
      BOOST_TEST(runs[1].state.value().empty());
    }
  }
}

BOOST_AUTO_TEST_CASE(restored_replicas_take_their_own_residual_back) {
  const std::vector<float> first = ExpectedResidual(kBf16, 0, 2);
  const std::vector<float> second = ExpectedResidual(kBf16, 1, 2);
  const std::vector<std::span<const float>> restored = {first, second};
  // No step after the restore: the residuals handed back are the restored ones, rank by rank.
  const std::vector<ReplicaRun> runs = Run(kBf16, restored, 0);
  const std::vector<std::vector<float>> want = {first, second};
  BOOST_TEST((runs[0].state.value() == want));
}

BOOST_AUTO_TEST_CASE(a_checkpoint_without_residuals_restores_them_as_zero) {
  const std::vector<float> optimizer_state(kParams, 1.0f);
  const testing::PsLinks links = testing::MakeLocalPsLinks(kWorkers, kShards);
  auto shards = Shards();
  std::vector<Result<std::vector<std::vector<float>>>> states(kWorkers, Status::Error("not run"));
  const std::vector<Status> served =
      testing::ServePs(links, shards, [&](int rank, std::span<Link* const> mine) {
        // The shards' optimizer keeps one state vector: the checkpoint holds it and no residuals.
        SyncPsStrategy ps(mine, kParams,
                          {.rank = rank,
                           .workers = kWorkers,
                           .compression = kTopK,
                           .optimizer_state_vectors = 1});
        const std::span<const float> state[] = {optimizer_state};
        Status s = ps.RestoreState(state);
        std::vector<float> params(kParams);
        if (s.ok()) s = ps.Connect(params, 0);
        states[static_cast<std::size_t>(rank)] =
            s.ok() ? ps.CheckpointState() : Result<std::vector<std::vector<float>>>(s);
      });
  for (const Status& s : served) BOOST_REQUIRE_MESSAGE(s.ok(), s.message());
  BOOST_REQUIRE_MESSAGE(states[0].ok(), states[0].status().message());
  const std::vector<std::vector<float>> zeros(kWorkers, std::vector<float>(kParams, 0.0f));
  BOOST_TEST((states[0].value() == zeros));
}

BOOST_AUTO_TEST_CASE(a_checkpoint_of_another_shape_is_refused) {
  // No shards serve these links: the goodbye of the strategies' destructors fails at once.
  const std::chrono::milliseconds at_once(1);
  const testing::PsLinks links = testing::MakeLocalPsLinks(kWorkers, kShards);
  SyncPsStrategy ps(links.worker[1], kParams,
                    {.rank = 1, .workers = kWorkers, .timeout = at_once, .compression = kBf16});
  BOOST_TEST(ps.CollectiveCheckpoints());
  const std::vector<float> whole(kParams), short_one(kParams - 1);
  const std::span<const float> one[] = {whole};
  BOOST_TEST(ps.RestoreState(one).message() ==
             "the checkpoint holds 1 state vectors; the shards' optimizer keeps 0 and 2 workers "
             "compressing their pushes add one residual each");
  const std::span<const float> wrong_size[] = {whole, short_one};
  BOOST_TEST(ps.RestoreState(wrong_size).message() ==
             "worker rank 1's residual holds 1000 floats, not 1001");
  // Without compression there is no residual and nothing to checkpoint together.
  const testing::PsLinks plain_links = testing::MakeLocalPsLinks(1, 1);
  SyncPsStrategy plain(plain_links.worker[0], kParams, {.timeout = at_once});
  BOOST_TEST(!plain.CollectiveCheckpoints());
}

BOOST_AUTO_TEST_CASE(a_replica_that_sends_no_residual_fails_the_checkpoint_naming_it) {
  const testing::PsLinks links = testing::MakeLocalPsLinks(kWorkers, kShards);
  auto shards = Shards();
  Status checkpoint;
  const std::vector<Status> served =
      testing::ServePs(links, shards, [&](int rank, std::span<Link* const> mine) {
        SyncPsStrategy ps(mine, kParams, {.rank = rank, .workers = kWorkers, .compression = kBf16});
        std::vector<float> params(kParams);
        Status s = ps.Connect(params, 0);
        std::vector<float> grad = Gradient(rank, 0);
        if (s.ok()) s = ps.Apply(0, params, grad, 0.1f, {.rows = 1, .total_rows = kWorkers});
        // Rank 1 says goodbye where it should hand over its residual.
        if (rank == 0) checkpoint = ps.CheckpointState().status();
        (void)ps.Finish();
      });
  BOOST_TEST(!checkpoint.ok());
  for (const Status& s : served) {
    BOOST_TEST(s.message().find("the residuals of the checkpoint before step 1: worker rank 1 "
                                "sent a goodbye message, which the shard does not expect now") !=
                   std::string::npos,
               s.message());
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ps_residuals_test
}  // namespace dtrain::dist
