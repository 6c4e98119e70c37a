// Helpers for strategy tests: a small model and data set, and training N replicas of it — as
// threads over an in-process ring, or one replica over links a test made — with a strategy the
// test chooses, returning each replica's final parameters.
//
//   auto finals = TrainReplicasAsThreads(model, set, 3, OptionsFor, MakeSync);
//   BOOST_TEST((finals[1].value() == finals[0].value()));
//
// One thread at a time (it starts and joins its own threads).
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "core/data/readers.h"
#include "core/dist/local_link.h"
#include "core/dist/ring_allreduce.h"
#include "core/train/trainer.h"

namespace dtrain::dist::testing {

inline model::ModelSpec SmallSpec() {
  model::ModelSpec s;
  s.type = model::ModelType::kMlp;
  s.inputs = 6;
  s.hidden = {12};
  s.activation = math::Activation::kTanh;
  s.outputs = 3;
  s.loss = model::LossType::kSoftmaxCrossEntropy;
  return s;
}

inline data::Dataset Blobs(std::size_t rows) {
  data::BlobsOptions blobs;
  blobs.rows = rows;
  blobs.features = 6;
  blobs.classes = 3;
  return data::MakeBlobs(blobs);
}

inline double MaxRelativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]) /
                                std::max(1.0, std::abs(static_cast<double>(b[i]))));
  }
  return worst;
}

// Makes replica `rank`'s strategy over its ring.
using StrategyFactory = std::function<std::unique_ptr<train::Strategy>(
    RingAllReduce& ring, int rank, int world, std::size_t params)>;
// The train options of replica `rank` of `world`.
using OptionsFactory = std::function<train::TrainOptions(int rank, int world)>;

inline Result<std::vector<float>> TrainReplica(const model::Model& model, const data::Dataset& set,
                                               int rank, int world, const RingLinks& links,
                                               const OptionsFactory& options,
                                               const StrategyFactory& make) {
  RingAllReduce ring(rank, world, links.left, links.right);
  std::unique_ptr<train::Strategy> strategy = make(ring, rank, world, model.NumParams());
  train::Trainer trainer(model, options(rank, world), set, nullptr, data::ConstantScaling(1.0f),
                         *strategy);
  trainer.InitParams();
  train::NullListener listener;
  auto why = trainer.Run(listener);
  if (!why.ok()) return why.status();
  return std::vector<float>(trainer.params().begin(), trainer.params().end());
}

inline std::vector<Result<std::vector<float>>> TrainReplicasAsThreads(
    const model::Model& model, const data::Dataset& set, int world, const OptionsFactory& options,
    const StrategyFactory& make) {
  std::vector<RingLinks> links = MakeLocalRing(world);
  std::vector<Result<std::vector<float>>> finals(static_cast<std::size_t>(world),
                                                 Status::Error("not run"));
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back(
        [&, r] { finals[r] = TrainReplica(model, set, r, world, links[r], options, make); });
  }
  for (std::thread& t : ranks) t.join();
  return finals;
}

}  // namespace dtrain::dist::testing
