// mode = "local": replicas are bitwise identical right after each parameter average (and not in
// between); average_every = 1 with plain SGD is synchronous SGD.
#include <boost/test/unit_test.hpp>

#include "core/dist/local_sgd_strategy.h"
#include "core/dist/sync_strategy.h"
#include "core/math/gemm.h"
#include "replica_harness.h"

namespace dtrain::dist {
namespace local_sgd_test {

using testing::Blobs;
using testing::MaxRelativeDifference;
using testing::TrainReplicasAsThreads;

optim::OptimizerOptions Sgd() { return {}; }

train::TrainOptions Options(std::int64_t steps, data::ShardMode sharding, int rank, int world) {
  train::TrainOptions o;
  o.epochs = 0;
  o.steps = steps;
  o.batch_size = 16;
  o.seed = 8;
  o.schedule.lr = 0.1f;
  o.rank = rank;
  o.world_size = world;
  o.sharding = sharding;
  return o;
}

BOOST_AUTO_TEST_CASE(replicas_are_identical_right_after_each_average) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(960);
  const model::Model model(testing::SmallSpec());
  auto make_local = [](RingAllReduce& ring, int, int, std::size_t n) {
    optim::OptimizerOptions momentum;
    momentum.type = optim::OptimizerType::kMomentum;
    return std::unique_ptr<train::Strategy>(
        std::make_unique<LocalSgdStrategy>(ring, optim::MakeOptimizer(momentum, 0, n), 0.0f, 4));
  };
  for (std::int64_t steps : {12, 14}) {  // right after the third average / two steps past it
    BOOST_TEST_CONTEXT(steps << " steps") {
      auto options = [steps](int rank, int world) {
        return Options(steps, data::ShardMode::kContiguousShards, rank, world);
      };
      auto finals = TrainReplicasAsThreads(model, set, 3, options, make_local);
      for (const auto& f : finals) BOOST_REQUIRE_MESSAGE(f.ok(), f.status().message());
      const bool identical =
          finals[1].value() == finals[0].value() && finals[2].value() == finals[0].value();
      BOOST_TEST(identical == (steps % 4 == 0));
    }
  }
}

BOOST_AUTO_TEST_CASE(averaging_every_step_with_plain_sgd_is_sync_sgd) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(960);  // 960 = 20 global batches of 3 x 16: no short batch
  const model::Model model(testing::SmallSpec());
  auto options = [](int rank, int world) {
    return Options(40, data::ShardMode::kGlobalBatches, rank, world);
  };
  auto local = TrainReplicasAsThreads(
      model, set, 3, options, [](RingAllReduce& ring, int, int, std::size_t n) {
        return std::unique_ptr<train::Strategy>(
            std::make_unique<LocalSgdStrategy>(ring, optim::MakeOptimizer(Sgd(), 0, n), 0.0f, 1));
      });
  auto sync = TrainReplicasAsThreads(
      model, set, 3, options, [](RingAllReduce& ring, int, int, std::size_t n) {
        return std::unique_ptr<train::Strategy>(
            std::make_unique<SyncAllReduceStrategy>(ring, optim::MakeOptimizer(Sgd(), 0, n), 0.0f));
      });
  BOOST_REQUIRE(local[0].ok());
  BOOST_REQUIRE(sync[0].ok());
  const double worst = MaxRelativeDifference(local[0].value(), sync[0].value());
  BOOST_TEST_MESSAGE("local(1) vs sync: max relative difference " << worst);
  BOOST_TEST(worst < 1e-5);
}

}  // namespace local_sgd_test
}  // namespace dtrain::dist
