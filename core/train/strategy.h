// Strategy: how a replica's gradient becomes new parameters — the seam between the training
// loop (the same for every mode) and the distribution mode (single, sync, async, local).
//
//   LocalStrategy single(MakeOptimizer(opts, 0, n), clip_norm);
//   single.Apply(step, params, grad, lr, {rows, rows});
//
// Collective strategies (the replicas must all take the same number of steps) agree on when to
// stop: a replica that wants to stop calls ProposeStop, keeps training, and carries its vote with
// its next exchange; once AgreedStop() says so after an Apply, every replica stops after that same
// step. Independent strategies (single, async) refuse the proposal, and the caller stops at once.
//
// One thread at a time (the training thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/optim/optimizer.h"
#include "core/status.h"

namespace dtrain::train {

// Why a training loop stopped. The numeric values travel in stop votes; keep them.
// kEarlyStopped: train.early_stopping's patience ran out (core/train/early_stopping.h).
enum class StopReason { kCompleted = 0, kTargetReached = 1, kRequested = 2, kEarlyStopped = 3 };

// A stop vote as one integer on the wire, where votes are combined by their maximum (parameter
// servers): 0 for none, and the larger the more urgent: early stopped (1, the value kCompleted
// + 1 had, never proposed), target reached (2), requested (3); the first two are
// StopReason + 1, as before early stopping.
std::uint32_t StopVote(std::optional<StopReason> reason);
// The agreed reason of the largest vote (0: none; above 3, from a newer peer: requested).
std::optional<StopReason> FromStopVote(std::uint32_t vote);

// This replica's part of a step's batch: `rows` of the `total_rows` all replicas trained on
// (equal for one replica). `grad` is the mean over this replica's rows. `take_all`: the step must
// take every replica's gradient even where the strategy may go on without its slowest (backup
// workers): the epoch's last step and the run's, after which nothing could take owed rows.
struct StepShare {
  std::size_t rows = 0;
  std::size_t total_rows = 0;
  bool take_all = false;
};

// What a strategy spent on communication since it was built; cumulative, for per-worker metrics.
struct CommStats {
  double comm_seconds = 0.0;  // inside the strategy's exchanges, waiting included
  double wait_seconds = 0.0;  // of which blocked on peers or shards (not moving bytes)
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  // Gradient compression ([cluster] compression), when the strategy compresses: the seconds spent
  // encoding and decoding, and what the uncompressed exchange would have sent instead of
  // bytes_sent.
  bool compressed = false;
  double compression_seconds = 0.0;
  std::uint64_t uncompressed_bytes = 0;
  // Overlap (Strategy::DuringPass): of comm_seconds, which ran beside the gradient pass, the
  // seconds the training thread waited for the exchange after its pass. Without overlap every
  // second of comm_seconds is exposed.
  bool overlapped = false;
  double exposed_seconds = 0.0;
};

// A strategy's exchange that runs while the gradient pass still computes (overlap): the trainer
// starts each step with Start, the network then reports each layer's finished gradient
// (Network::WatchGradient) to Finished on the training thread, and Apply waits for the rest.
class PassExchange {
 public:
  virtual ~PassExchange() = default;
  // Before the pass of step `step`: `grad` (GradientTail floats follow it) is about to be
  // overwritten with this replica's gradient for `share`. `measure`: keep its squared L2 norm,
  // before any exchange, for SquaredNorm.
  virtual void Start(std::int64_t step, std::span<float> grad, const StepShare& share,
                     bool measure) = 0;
  // grad's floats from `begin` to its end are final.
  virtual void Finished(std::size_t begin) = 0;
  // After Apply of a measured step: its gradient's squared norm, as measured before the exchange.
  virtual double SquaredNorm() const = 0;
};

// What a sync replica scales its gradient by before the replicas' gradients are averaged, so that
// their mean is the mean over all the step's rows: world * rows / total_rows (1 when the replicas
// had equal shares).
float ShareWeight(const StepShare& share, int world);

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Consumes this replica's gradient of step `step` (it may be modified, e.g. clipped or
  // averaged) and updates `params` in place. The GradientTail() floats right after `grad` belong
  // to the same buffer and are the strategy's to overwrite.
  virtual Status Apply(std::int64_t step, std::span<float> params, std::span<float> grad, float lr,
                       const StepShare& share) = 0;
  // Floats the caller must allocate after the gradient, for the strategy's own use (e.g. stop
  // votes sent in the same message as the gradient, without copying it).
  virtual std::size_t GradientTail() const { return 0; }
  // Where the caller should compute its gradient and tail (`floats` of them), when the strategy
  // wants it somewhere of its own (e.g. memory other replicas read); empty: the caller's choice.
  // The span stays valid for the strategy's life.
  virtual std::span<float> GradientStorage(std::size_t /*floats*/) { return {}; }
  // Where the caller should keep its parameters (`floats` of them), when the strategy keeps one
  // copy for replicas that share memory; empty: the caller's own. The caller then writes them
  // only before its first Apply (every replica the same values: its initialization or the
  // checkpoint it resumes from), reads them anywhere but inside Apply, and passes exactly this
  // span to Apply, which changes them. Not asked for models with running statistics (each
  // replica keeps its own). The span stays valid for the strategy's life.
  virtual std::span<float> ParameterStorage(std::size_t /*floats*/) { return {}; }
  // The caller has written its parameters (and restored any optimizer state) and is about to
  // train: a strategy whose replicas share them waits here until every replica has, so that no
  // replica reads them while another still writes (an initialization passes through values other
  // than its last). Collective for such strategies; called once before the first step.
  virtual Status ParametersWritten() { return Status::Ok(); }
  // The optimizer whose state a checkpoint holds, or null if it lives elsewhere (e.g. on
  // parameter-server shards).
  virtual optim::Optimizer* LocalOptimizer() = 0;

  // Asks every replica to stop for `reason` after an upcoming step (see the contract above).
  // False: this strategy does not vote, the caller stops on its own now.
  virtual bool ProposeStop(StopReason /*reason*/) { return false; }
  // After Apply: the stop every replica agreed on at this step, if any (the most urgent reason
  // proposed: requested over target reached over early stopped).
  virtual std::optional<StopReason> AgreedStop() const { return std::nullopt; }
  // Communication so far (zero for strategies that do not communicate).
  virtual CommStats Stats() const { return {}; }
  // After Apply, where the strategy may go on without its slowest replicas (backup workers): for
  // the steps step, step + 1, ..., step + k - 1 (k >= 1), which ranks' gradients each took (bit r:
  // rank r's). More than one: this replica's gradient came after the others had gone on; it
  // resumes after the last of them with the parameters Apply wrote, having computed none of the
  // later ones. Empty: every rank's gradient, in the one step applied.
  virtual std::span<const std::uint64_t> TakenMasks() const { return {}; }
  // The optimizer to take this replica's step inside the gradient pass instead
  // (Network::ForwardBackwardStep), when the step needs nothing but this replica's gradient (no
  // clipping, no exchange); the caller then does not call Apply for that step. Null: call Apply.
  virtual optim::Optimizer* PassOptimizer() { return nullptr; }
  // After the last step, before the final evaluation: makes `params` the parameters the job
  // hands out, where they are not the replica's own (async: the shards', with this replica's last
  // window pushed). No Apply may follow.
  virtual Status Settle(std::span<float> /*params*/) { return Status::Ok(); }
  // The part of the exchange that runs during the gradient pass (see PassExchange), or null when
  // Apply does all of it.
  virtual PassExchange* DuringPass() { return nullptr; }
  // Threads the strategy's own passes over the parameters may share (the network's, idle while
  // Apply runs); strategies whose passes are not theirs alone to split ignore it.
  virtual void ShareThreads(math::ThreadTeam& /*team*/) {}

  // State of the strategy's own that a checkpoint keeps after the optimizer's (compressed sync:
  // each replica's error-feedback residual, PowerSGD's factors). Where every replica holds a part
  // of it (CollectiveCheckpoints), the replicas checkpoint together: a replica that wants a
  // checkpoint proposes one, which rides with its next exchange; once CheckpointAgreed() after an
  // Apply, every replica calls CheckpointState after that same step (and at the run's end), and
  // the first replica (rank 0, the checkpoint's writer) gets the whole state, the others none.
  virtual bool CollectiveCheckpoints() const { return false; }
  virtual void ProposeCheckpoint() {}
  virtual bool CheckpointAgreed() const { return false; }
  virtual Result<std::vector<std::vector<float>>> CheckpointState() {
    return std::vector<std::vector<float>>{};
  }
  // Takes back this replica's part of what CheckpointState gave (every replica gets all of it).
  virtual Status RestoreState(std::span<const std::span<const float>> state) {
    if (!state.empty()) return Status::Error("this strategy keeps no state of its own");
    return Status::Ok();
  }
};

// mode = "single": clip by global norm (if clip_norm > 0), then a local optimizer step.
class LocalStrategy final : public Strategy {
 public:
  LocalStrategy(std::unique_ptr<optim::Optimizer> optimizer, float clip_norm);
  Status Apply(std::int64_t step, std::span<float> params, std::span<float> grad, float lr,
               const StepShare& share) override;
  optim::Optimizer* LocalOptimizer() override { return optimizer_.get(); }
  optim::Optimizer* PassOptimizer() override {
    return clip_norm_ > 0.0f ? nullptr : optimizer_.get();
  }
  void ShareThreads(math::ThreadTeam& team) override { optimizer_->set_team(&team); }
  float clip_norm() const { return clip_norm_; }  // 0: no clipping

 private:
  std::unique_ptr<optim::Optimizer> optimizer_;
  float clip_norm_;
};

}  // namespace dtrain::train
