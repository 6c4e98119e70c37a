// mode = "local" with compression (CompressedLocalStrategy): replicas as threads over in-process
// links. Whatever the method, every replica holds the same bits right after each average; error
// feedback conserves the replicas' changes (the parameters after an average plus the mean
// residual are where uncompressed averaging of the same changes would be, to rounding); the state
// a checkpoint keeps (residuals, PowerSGD's Q, the last average) is gathered to rank 0 and taken
// back by each replica; a team of threads compresses with one thread's bits.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "compression_harness.h"
#include "core/compress/compression_plan.h"
#include "core/dist/compressed_local_strategy.h"
#include "core/math/gemm.h"
#include "core/math/thread_team.h"
#include "replica_harness.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace compressed_local_test {

using testing::Blobs;
using testing::TrainReplicasAsThreads;
using testing::WideSpec;
constexpr const auto& kMethods = testing::kLossyMethods;

// One epoch of 960 rows is 30 steps of 2 x 16 rows, 20 of 3 x 16: each ends with an average.
constexpr int kAverageEvery = 5;
constexpr float kLr = 0.05f;

std::unique_ptr<CompressedLocalStrategy> MakeLocal(RingAllReduce& ring, const model::Model& model,
                                                   const compress::Settings& settings,
                                                   optim::OptimizerType optimizer,
                                                   bool average_optimizer = false) {
  return std::make_unique<CompressedLocalStrategy>(
      ring, compress::PlanCompression(model.Tensors(), settings), settings, /*seed=*/7,
      optim::MakeOptimizer(testing::OptimizerOfType(optimizer), 0, model.NumParams()), 0.0f,
      AveragingOptions{.average_every = kAverageEvery, .average_optimizer = average_optimizer});
}

BOOST_AUTO_TEST_SUITE(dist_compressed_local)

BOOST_AUTO_TEST_CASE(every_method_leaves_every_replica_with_the_same_bits_right_after_an_average) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(960);
  const model::Model model(WideSpec());
  for (const compress::Settings& settings : kMethods) {
    for (int world : {2, 3}) {
      for (bool average_optimizer : {false, true}) {
        BOOST_TEST_CONTEXT(compress::MethodName(settings.method)
                           << ", world " << world << ", average_optimizer " << average_optimizer) {
          const auto finals = TrainReplicasAsThreads(
              model, set, world,
              [](int rank, int w) { return testing::GlobalBatchOptions(16, rank, w, 1); },
              [&](RingAllReduce& ring, int, int, std::size_t) -> std::unique_ptr<train::Strategy> {
                return MakeLocal(ring, model, settings, optim::OptimizerType::kMomentum,
                                 average_optimizer);
              });
          for (const auto& f : finals) BOOST_REQUIRE_MESSAGE(f.ok(), f.status().message());
          for (int r = 1; r < world; ++r) {
            BOOST_TEST((finals[r].value() == finals[0].value()), "rank " << r << " differs");
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(powersgd_replicas_on_teams_of_threads_average_with_one_threads_bits) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(960);
  const model::Model model(WideSpec());
  const compress::Settings settings{.method = compress::Method::kPowerSgd, .rank = 2};
  constexpr int kWorld = 2;
  std::vector<std::unique_ptr<math::ThreadTeam>> teams;
  for (int r = 0; r < kWorld; ++r) teams.push_back(std::make_unique<math::ThreadTeam>(3));
  const auto run = [&](bool shared) {
    return TrainReplicasAsThreads(
        model, set, kWorld,
        [](int rank, int w) { return testing::GlobalBatchOptions(16, rank, w, 1); },
        [&](RingAllReduce& ring, int rank, int, std::size_t) -> std::unique_ptr<train::Strategy> {
          auto strategy = MakeLocal(ring, model, settings, optim::OptimizerType::kMomentum);
          if (shared) strategy->ShareThreads(*teams[static_cast<std::size_t>(rank)]);
          return strategy;
        });
  };
  const auto alone = run(false), shared = run(true);
  for (int r = 0; r < kWorld; ++r) {
    BOOST_REQUIRE(alone[r].ok() && shared[r].ok());
    BOOST_TEST((shared[r].value() == alone[r].value()), "rank " << r);
  }
}

// Rank r of `world` takes `steps` plain SGD steps of its own gradients (testing::Input) from zero
// parameters; returns each rank's final parameters and residual.
struct Final {
  std::vector<float> params, residual;
};
std::vector<Final> RunSgd(const model::Model& model, int world, const compress::Settings& settings,
                          int steps) {
  std::vector<Final> finals(static_cast<std::size_t>(world));
  testing::ApplyInputsOnRanks<CompressedLocalStrategy>(
      world, model.NumParams(), steps, kLr,
      [&](RingAllReduce& ring, int) {
        return MakeLocal(ring, model, settings, optim::OptimizerType::kSgd);
      },
      [&](int r, CompressedLocalStrategy& strategy, std::span<const float> params) {
        const std::span<const float> residual = strategy.compressor().StateVectors().front();
        finals[static_cast<std::size_t>(r)] = {{params.begin(), params.end()},
                                               {residual.begin(), residual.end()}};
        return Status::Ok();
      });
  return finals;
}

BOOST_AUTO_TEST_CASE(error_feedback_conserves_the_replicas_changes) {
  math::SetBlasThreads(1);
  const model::Model model(WideSpec());
  const int world = 2, steps = 4 * kAverageEvery;
  // Plain SGD from zero: replica r's uncompressed change is -lr * the sum of its gradients.
  std::vector<double> expected(model.NumParams(), 0.0);
  for (int r = 0; r < world; ++r) {
    for (int step = 0; step < steps; ++step) {
      const std::vector<float> g =
          testing::Input(r, model.NumParams(), static_cast<std::uint32_t>(step));
      for (std::size_t i = 0; i < g.size(); ++i) expected[i] -= kLr * g[i] / world;
    }
  }
  for (const compress::Settings& settings : kMethods) {
    BOOST_TEST_CONTEXT(compress::MethodName(settings.method)) {
      const std::vector<Final> finals = RunSgd(model, world, settings, steps);
      BOOST_TEST((finals[1].params == finals[0].params));
      double worst = 0.0, residual = 0.0;
      for (std::size_t i = 0; i < expected.size(); ++i) {
        double mean_residual = 0.0;
        for (const Final& f : finals) mean_residual += f.residual[i] / world;
        residual = std::max(residual, std::abs(mean_residual));
        const double off = std::abs(finals[0].params[i] + mean_residual - expected[i]);
        worst = std::max(worst, off / std::max(1.0, std::abs(expected[i])));
      }
      BOOST_TEST(residual > 0.0);  // something was held back, and is accounted for
      BOOST_TEST(worst < 1e-4);    // relative, to float rounding
    }
  }
}

BOOST_AUTO_TEST_CASE(rank_0_gets_the_residuals_factors_and_last_average_and_each_takes_its_own) {
  math::SetBlasThreads(1);
  const model::Model model(WideSpec());
  const compress::Settings settings{.method = compress::Method::kPowerSgd, .rank = 2};
  const int world = 2;
  std::vector<std::vector<std::vector<float>>> states(world);
  std::vector<std::vector<float>> params(world);
  testing::ApplyInputsOnRanks<CompressedLocalStrategy>(
      world, model.NumParams(), kAverageEvery, kLr,
      [&](RingAllReduce& ring, int) {
        return MakeLocal(ring, model, settings, optim::OptimizerType::kSgd);
      },
      [&](int r, CompressedLocalStrategy& strategy, std::span<const float> final_params) {
        params[r].assign(final_params.begin(), final_params.end());
        Result<std::vector<std::vector<float>>> state = strategy.CheckpointState();
        if (!state.ok()) return state.status();
        states[r] = std::move(state).value();
        return Status::Ok();
      });
  // Two residuals, one Q, then the parameters of the average just taken.
  BOOST_REQUIRE_EQUAL(states[0].size(), 4u);
  BOOST_TEST((states[0][0] != states[0][1]));
  BOOST_TEST((states[0][3] == params[0]));
  BOOST_TEST(states[1].empty());

  std::vector<RingLinks> links = MakeLocalRing(world);
  RingAllReduce ring(1, world, links[1].left, links[1].right);
  auto restored = MakeLocal(ring, model, settings, optim::OptimizerType::kSgd);
  std::vector<std::span<const float>> views(states[0].begin(), states[0].end());
  BOOST_REQUIRE(restored->RestoreState(views).ok());
  const std::vector<std::span<float>> own = restored->compressor().StateVectors();
  BOOST_TEST((std::vector<float>(own[0].begin(), own[0].end()) == states[0][1]));
  BOOST_TEST((std::vector<float>(own[1].begin(), own[1].end()) == states[0][2]));

  // A checkpoint before the first step has no last average yet; a wrong one is refused.
  views[3] = {};
  BOOST_TEST(restored->RestoreState(views).ok());
  views[3] = std::span(states[0][0]).first(5);
  const Status refused = restored->RestoreState(views);
  BOOST_TEST(refused.message().find("last average holds 5 parameters") != std::string::npos,
             refused.message());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace compressed_local_test
}  // namespace dtrain::dist
