// SyncAllReduceStrategy: mode = "sync", allreduce = "ring". Every step, each replica's gradient
// is weighted by its share of the step's rows, averaged over all replicas (by ring all-reduce, or
// within each host and then across hosts: any MeanCollective), then
// clipped and applied by the same optimizer on every replica — so replicas stay bitwise
// identical, and N replicas x batch b train like one x batch N*b (with ShardMode::kGlobalBatches).
//
//   RingAllReduce ring(rank, world, links.left, links.right);
//   SyncAllReduceStrategy sync(ring, optim::MakeOptimizer(opts, 0, n), clip_norm);
//   Trainer trainer(model, options /* sharding = kGlobalBatches */, train, &test, scaling, sync);
//
// Stop votes travel with the gradients (VotingAllReduce): every replica stops after the same step.
//
// One thread at a time (the training thread). The ring (collective) must outlive the strategy.
#pragma once

#include <memory>

#include "core/dist/mean_collective.h"
#include "core/dist/voting_allreduce.h"
#include "core/optim/optimizer.h"
#include "core/train/strategy.h"

namespace dtrain::dist {

class SyncAllReduceStrategy final : public train::Strategy {
 public:
  SyncAllReduceStrategy(MeanCollective& mean, std::unique_ptr<optim::Optimizer> optimizer,
                        float clip_norm);

  // grad becomes sum_r rows_r * grad_r / total_rows (the mean over the whole step's batch).
  Status Apply(std::int64_t step, std::span<float> params, std::span<float> grad, float lr,
               const train::StepShare& share) override;
  optim::Optimizer* LocalOptimizer() override { return local_.LocalOptimizer(); }
  std::size_t GradientTail() const override { return VotingAllReduce::kVoteFloats; }
  bool ProposeStop(train::StopReason reason) override {
    exchange_.Propose(reason);
    return true;
  }
  std::optional<train::StopReason> AgreedStop() const override { return exchange_.agreed(); }
  train::CommStats Stats() const override { return exchange_.stats(); }

 private:
  VotingAllReduce exchange_;  // over the caller's collective, which also owns the links it uses
  MeanCollective& mean_;
  train::LocalStrategy local_;  // the clip-and-step every replica takes
};

}  // namespace dtrain::dist
