// SyncPsStrategy: mode = "sync", allreduce = "ps". Every step each replica pushes its gradient,
// weighted by its share of the step's rows, to the parameter-server shards (parameter_shard.h);
// each shard waits for all N pushes of the step, sums them in rank order, applies its optimizer
// and sends every replica the new range. So replicas receive bitwise identical parameters, and N
// replicas x batch b train like one x batch N*b (with ShardMode::kGlobalBatches).
//
//   SyncPsStrategy ps(shard_links, model.NumParams(), {.rank = r, .workers = n});
//   // after InitParams: start from the shards' values
//   ps.Connect(trainer.params(), trainer.position().step);
//   Trainer trainer(model, options /* sharding = kGlobalBatches */, train, &test, scaling, ps);
//
// The optimizer and its state live on the shards: LocalOptimizer() is null, and a checkpoint
// takes Snapshot() (a consistent cut after the last step) instead.
//
// Clipping (clip_norm > 0) differs from ring mode: the global norm of the averaged gradient would
// need another exchange between the shards, so each replica clips its OWN gradient by its global
// norm before pushing. With one replica this equals ring/single mode; with several, the average
// of clipped gradients is bounded by clip_norm too, but is not the clipped average.
//
// Stop votes ride on the pushes; the shards answer with the most urgent vote of the step, so
// every replica sees the same AgreedStop() after the same Apply. Connect is optional (without it
// the first Apply says hello and the replica's own initial values are used for step 0's gradient).
// The destructor says goodbye (Finish) unless the strategy failed.
//
// With compression (bf16, topk) each push is encoded with this replica's error feedback
// (ps_client.h) after clipping; the shards decode and sum as above, so replicas still receive the
// same parameters. The residuals are checkpointed through the shards, the replicas' one common
// channel (CollectiveCheckpoints; ps_protocol.md, "Residuals"): a proposal rides on a push, the
// shards answer every replica with whether any proposed one, and after that step every replica
// sends each shard its residual's slice; rank 0 receives them all. The checkpoint holds the
// shards' optimizer state vectors (options.optimizer_state_vectors of them) and then the N
// residuals, rank by rank; a checkpoint without them (uncompressed, or older) resumes with zero
// residuals.
//
// With backup workers (options.backup_workers = b > 0; one shard, raw pushes; ps_protocol.md,
// "Backup workers") the shard applies each step once N - b pushes have come, unless the step
// takes every gradient (share.take_all, a checkpoint proposal, a stop vote). TakenMasks() then
// says which ranks each step took: one mask, or, when this replica's push came after its step,
// the masks of the steps it missed too; it goes on after the last of them. Checkpoints are
// collective, so that the step before one takes every gradient (no state of their own).
//
// In an elastic job (options.members > 0; ps_protocol.md, "Elastic jobs") the hello names the
// replica's membership (options.backup_workers is then the membership's, min(b, members - 1)); when
// a member is lost the shard answers with a regroup reply, which fails the call like a ring
// failure: the replica regroups (daemon/runner/elastic_replica.h) and comes back with a new
// strategy for the new membership.
//
// One thread at a time (the training thread). The links must outlive the strategy.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/dist/ps_client.h"
#include "core/dist/ps_strategy.h"
#include "core/train/strategy.h"

namespace dtrain::dist {

struct SyncPsOptions {
  int rank = 0;
  int workers = 1;
  float clip_norm = 0.0f;  // per replica, before pushing (see above)
  std::chrono::milliseconds timeout{30'000};
  compress::Settings compression{};  // the pushes' (ps_client.h): none, bf16 or topk
  // With compression: how many of a checkpoint's state vectors are the shards' optimizer's
  // (optim::StateVectorCount), before the residuals (RestoreState).
  std::size_t optimizer_state_vectors = 0;
  int backup_workers = 0;  // b: the shard may take N - b pushes a step (see above)
  // Elastic jobs: this replica's membership (epoch, size; rank is its position there), as
  // PsClientOptions; members = 0: not elastic. A regroup reply fails Apply, Snapshot, Connect.
  std::uint32_t membership = 0;
  int members = 0;
};

class SyncPsStrategy final : public PsStrategy {
 public:
  // shard_links[k] is connected to shard k.
  SyncPsStrategy(std::span<Link* const> shard_links, std::size_t num_params, SyncPsOptions options);
  ~SyncPsStrategy() override;
  SyncPsStrategy(const SyncPsStrategy&) = delete;
  SyncPsStrategy& operator=(const SyncPsStrategy&) = delete;

  // Says hello to every shard and receives their current parameters into `params`.
  Status Connect(std::span<float> params, std::int64_t step) override;

  // Pushes grad (clipped first when clip_norm > 0) with lr and this replica's stop vote; `params`
  // becomes the shards' parameters after step `step`.
  Status Apply(std::int64_t step, std::span<float> params, std::span<float> grad, float lr,
               const train::StepShare& share) override;
  optim::Optimizer* LocalOptimizer() override { return nullptr; }
  bool ProposeStop(train::StopReason reason) override;
  std::optional<train::StopReason> AgreedStop() const override { return agreed_; }
  train::CommStats Stats() const override { return client_.Stats(); }

  // Every shard's parameters and optimizer state after the last step this replica applied (any
  // replica may ask between its steps; rank 0 does, for checkpoints).
  Result<PsSnapshot> Snapshot() override;
  // Says goodbye to every shard; later Applies fail. Idempotent.
  Status Finish() override;
  bool KeepsClocks() const override { return false; }
  std::span<const std::uint64_t> TakenMasks() const override { return client_.masks(); }

  // With compression: the replicas checkpoint their residuals together; with backup workers the
  // proposal makes its step take every gradient (see above).
  bool CollectiveCheckpoints() const override {
    return Compressed() || options_.backup_workers > 0;
  }
  void ProposeCheckpoint() override { checkpoint_proposed_ = true; }
  bool CheckpointAgreed() const override { return checkpoint_agreed_; }
  // Every replica's residual to rank 0, rank by rank; the others get none.
  Result<std::vector<std::vector<float>>> CheckpointState() override;
  // `state`: the checkpoint's vectors after its parameters (the shards' optimizer's, then the
  // residuals, if any): takes this replica's residual.
  Status RestoreState(std::span<const std::span<const float>> state) override;

 private:
  // Says hello to the shards unless Connect or an earlier call did, as a replica that completed
  // `step` steps.
  Status Greet(std::uint64_t step);
  // Whether the pushes go compressed (bf16, topk): then each replica keeps a residual.
  bool Compressed() const { return client_.compresses(); }

  PsClient client_;
  SyncPsOptions options_;
  std::uint32_t vote_ = kNoVote;  // this replica's vote on the wire (train::StopVote)
  std::optional<train::StopReason> agreed_;
  std::uint64_t steps_ = 0;           // steps pushed
  std::uint64_t next_step_ = 0;       // the step after the last one pushed (0 before any)
  bool checkpoint_proposed_ = false;  // rides on the next push
  bool checkpoint_agreed_ = false;    // at the last step pushed
  bool failed_ = false;
  bool finished_ = false;
};

}  // namespace dtrain::dist
