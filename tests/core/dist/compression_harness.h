// Helpers for the tests of compressing strategies: a model with a layer PowerSGD compresses, one
// setting of each lossy method, the sync replicas' options and optimizer, their final parameters,
// and ranks as threads that apply known gradients.
//
//   ApplyInputsOnRanks(2, n, /*steps=*/3, 0.01f, MakeStrategy,
//                      [&](int rank, train::Strategy& s, std::span<const float> params) {...});
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "core/compress/compression_plan.h"
#include "core/dist/compressed_sync_strategy.h"
#include "replica_harness.h"
#include "ring_harness.h"

namespace dtrain::dist::testing {

// Wide enough that PowerSGD compresses its 64 x 64 layer (and not the others).
inline model::ModelSpec WideSpec() {
  model::ModelSpec s = SmallSpec();
  s.hidden = {64, 64};
  return s;
}

inline constexpr compress::Settings kLossyMethods[] = {
    {.method = compress::Method::kBf16},
    {.method = compress::Method::kPowerSgd, .rank = 2},
    {.method = compress::Method::kTopK, .fraction = 0.05},
};

// Replica `rank` of `world` in the compressed sync tests: 16 rows of each global batch, one epoch.
inline train::TrainOptions OneEpochPerReplica(int rank, int world) {
  return GlobalBatchOptions(16, rank, world, /*epochs=*/1);
}

// Their optimizer: momentum SGD, its defaults.
inline const optim::OptimizerOptions kMomentum = OptimizerOfType(optim::OptimizerType::kMomentum);

// The seed of their compressors (PowerSGD's first Q).
inline constexpr std::uint64_t kCompressionSeed = 7;

// CompressedSyncStrategy of `settings` for `model`'s replicas.
inline StrategyFactory CompressedSync(const model::Model& model, compress::Settings settings) {
  return [&model, settings](RingAllReduce& ring, int, int, std::size_t n) {
    return std::make_unique<CompressedSyncStrategy>(
        ring, ring, compress::PlanCompression(model.Tensors(), settings), settings,
        kCompressionSeed, optim::MakeOptimizer(kMomentum, 0, n), 1.0f);
  };
}

// Each replica's final parameters; requires that every one trained.
inline std::vector<std::vector<float>> Finals(std::vector<Result<std::vector<float>>> results) {
  std::vector<std::vector<float>> finals;
  for (auto& r : results) {
    BOOST_REQUIRE_MESSAGE(r.ok(), r.status().message());
    finals.push_back(std::move(r).value());
  }
  return finals;
}

// Ranks 0 .. world-1 as threads over an in-process ring, each with the strategy `make` gives it:
// from zero parameters (n floats), `steps` steps of the gradients Input(rank, n, step) at rate
// `lr`, then `done` with the strategy and the parameters. Requires every rank to succeed.
template <typename Strategy>
void ApplyInputsOnRanks(
    int world, std::size_t n, int steps, float lr,
    const std::function<std::unique_ptr<Strategy>(RingAllReduce&, int rank)>& make,
    const std::function<Status(int rank, Strategy&, std::span<const float>)>& done) {
  std::vector<RingLinks> links = MakeLocalRing(world);
  std::vector<Status> failures(static_cast<std::size_t>(world));
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      const auto i = static_cast<std::size_t>(r);
      RingAllReduce ring(r, world, links[i].left, links[i].right);
      const std::unique_ptr<Strategy> strategy = make(ring, r);
      std::vector<float> params(n, 0.0f);
      for (int step = 0; step < steps && failures[i].ok(); ++step) {
        std::vector<float> grad = Input(r, n, static_cast<std::uint32_t>(step));
        failures[i] = strategy->Apply(step, params, grad, lr, {1, 1});
      }
      if (failures[i].ok()) failures[i] = done(r, *strategy, params);
    });
  }
  for (std::thread& t : ranks) t.join();
  for (const Status& s : failures) BOOST_REQUIRE_MESSAGE(s.ok(), s.message());
}

}  // namespace dtrain::dist::testing
