// LocalSgdStrategy: mode = "local" (model averaging / local SGD). Each replica takes ordinary
// local optimizer steps on its own data; every `average_every` steps the parameters are averaged
// over all replicas by ring all-reduce, so right after each average the replicas are bitwise
// identical. With average_every = 1 and plain SGD this is exactly synchronous SGD.
//
//   LocalSgdStrategy local(ring, optim::MakeOptimizer(opts, 0, n), clip_norm, /*average_every=*/8);
//
// Optimizer state (momentum, Adam moments, Adagrad accumulators) stays per replica unless
// `average_optimizer`, which averages it with the parameters. Stop votes travel with the averages
// (VotingAllReduce), so the replicas stop together right after an average. One thread at a time
// (the training thread); the ring must outlive the strategy.
#pragma once

#include <memory>

#include "core/dist/ring_allreduce.h"
#include "core/dist/voting_allreduce.h"
#include "core/optim/optimizer.h"
#include "core/train/strategy.h"

namespace dtrain::dist {

class LocalSgdStrategy final : public train::Strategy {
 public:
  LocalSgdStrategy(RingAllReduce& ring, std::unique_ptr<optim::Optimizer> optimizer,
                   float clip_norm, int average_every, bool average_optimizer = false);

  // Whether the replicas' parameters are averaged at the end of the step that completes
  // `completed` steps (completed >= 1): every average_every-th step, counted from step 0 whatever
  // the run resumed from, so right after it every replica holds the same state.
  static bool AveragesAt(std::int64_t completed, int average_every) {
    return completed % (average_every < 1 ? 1 : average_every) == 0;
  }

  // The replica leaves its ring between steps (an elastic member told to regroup closes its links:
  // runner::TrainingSession::LeaveRing): its next step fails at once instead of training on alone
  // until the next average, where it would find the ring closed.
  void LeaveRing() { left_ = true; }

  Status Apply(std::int64_t step, std::span<float> params, std::span<float> grad, float lr,
               const train::StepShare& share) override;
  optim::Optimizer* LocalOptimizer() override { return local_.LocalOptimizer(); }
  bool ProposeStop(train::StopReason reason) override {
    exchange_.Propose(reason);
    return true;
  }
  std::optional<train::StopReason> AgreedStop() const override { return agreed_; }
  train::CommStats Stats() const override { return exchange_.stats(); }

 private:
  // Averages params (and the optimizer state) in place.
  Status Average(std::span<float> params, std::uint32_t op);

  VotingAllReduce exchange_;  // over the caller's ring, which also owns its links
  train::LocalStrategy local_;  // the clip-and-step every replica takes
  int average_every_;
  bool average_optimizer_;
  std::optional<train::StopReason> agreed_;  // at the last step
  bool left_ = false;                        // LeaveRing was called
};

}  // namespace dtrain::dist
