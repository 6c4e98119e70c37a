// mode = "sync" over a ring: N replicas x batch b end bitwise identical to each other and equal
// (within float tolerance) to one replica x batch N*b on the same global batches.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <thread>
#include <tuple>

#include "core/data/readers.h"
#include "core/dist/local_link.h"
#include "core/dist/sync_strategy.h"
#include "core/math/gemm.h"
#include "core/train/trainer.h"

namespace dtrain::dist {
namespace {

class Quiet final : public train::TrainListener {
 public:
  void Record(std::span<const train::MetricPoint>) override {}
  bool AfterStep(const train::Trainer&) override { return true; }
};

model::ModelSpec Spec() {
  model::ModelSpec s;
  s.type = model::ModelType::kMlp;
  s.inputs = 6;
  s.hidden = {12};
  s.activation = math::Activation::kTanh;
  s.outputs = 3;
  s.loss = model::LossType::kSoftmaxCrossEntropy;
  return s;
}

train::TrainOptions Options(int batch, int rank, int world) {
  train::TrainOptions o;
  o.epochs = 2;  // 1000 rows: the last global batch of each epoch is short
  o.batch_size = batch;
  o.seed = 4;
  o.weight_decay = 1e-3f;
  o.schedule.lr = 0.05f;
  o.rank = rank;
  o.world_size = world;
  o.sharding = data::ShardMode::kGlobalBatches;
  return o;
}

optim::OptimizerOptions Momentum() {
  optim::OptimizerOptions o;
  o.type = optim::OptimizerType::kMomentum;
  return o;
}

BOOST_AUTO_TEST_CASE(n_replicas_match_one_replica_with_n_times_the_batch) {
  math::SetBlasThreads(1);
  data::BlobsOptions blobs;
  blobs.rows = 1000;
  blobs.features = 6;
  blobs.classes = 3;
  const data::Dataset set = data::MakeBlobs(blobs);
  const model::Model model(Spec());
  const int batch = 16;

  for (int world : {2, 3, 4}) {
    BOOST_TEST_CONTEXT("world " << world) {
      // One replica, batch world*b.
      train::LocalStrategy single(optim::MakeOptimizer(Momentum(), 0, model.NumParams()), 1.0f);
      train::Trainer reference(model, Options(batch * world, 0, 1), set, nullptr,
                               data::ConstantScaling(1.0f), single);
      reference.InitParams();
      Quiet quiet;
      BOOST_REQUIRE(reference.Run(quiet).ok());

      // world replicas as threads over an in-process ring.
      std::vector<RingLinks> links = MakeLocalRing(world);
      std::vector<std::vector<float>> finals(static_cast<std::size_t>(world));
      std::vector<std::string> errors(static_cast<std::size_t>(world));
      std::vector<std::int64_t> steps(static_cast<std::size_t>(world));
      std::vector<std::thread> ranks;
      for (int r = 0; r < world; ++r) {
        ranks.emplace_back([&, r] {
          RingAllReduce ring(r, world, links[r].left, links[r].right);
          SyncAllReduceStrategy sync(ring, world,
                                     optim::MakeOptimizer(Momentum(), 0, model.NumParams()), 1.0f);
          train::Trainer trainer(model, Options(batch, r, world), set, nullptr,
                                 data::ConstantScaling(1.0f), sync);
          trainer.InitParams();
          Quiet listener;
          auto why = trainer.Run(listener);
          if (!why.ok()) errors[r] = why.status().message();
          steps[r] = trainer.position().step;
          finals[r].assign(trainer.params().begin(), trainer.params().end());
        });
      }
      for (std::thread& t : ranks) t.join();
      for (int r = 0; r < world; ++r) BOOST_TEST(errors[r].empty(), errors[r]);
      BOOST_TEST(steps[0] == reference.position().step);
      for (int r = 1; r < world; ++r) {
        BOOST_TEST((finals[r] == finals[0]), "rank " << r << " differs from rank 0");
      }
      double worst = 0.0;
      for (std::size_t i = 0; i < finals[0].size(); ++i) {
        const double want = reference.params()[i];
        const double diff = std::abs(finals[0][i] - want) / std::max(1.0, std::abs(want));
        worst = std::max(worst, diff);
      }
      BOOST_TEST_MESSAGE("world " << world << ": max relative difference " << worst);
      BOOST_TEST(worst < 1e-5);
    }
  }
}

}  // namespace
}  // namespace dtrain::dist
