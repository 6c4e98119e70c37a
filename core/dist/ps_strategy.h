// PsStrategy: the strategy of a replica whose parameters and optimizer live on parameter-server
// shards (parameter_shard.h) — what the runner asks of any of them, whatever the mode: sync with
// allreduce = "ps" (SyncPsStrategy) or async (DownpourStrategy).
//
//   std::unique_ptr<PsStrategy> ps = ...;   // made for the mode's exchange
//   ps->Connect(trainer.params(), trainer.position().step);  // after InitParams or a restore
//   ... training, checkpoints from ps->Snapshot() ...
//   ps->Finish();
//
// Invariants: LocalOptimizer() is null (the optimizer is the shards'); Connect, Snapshot and
// Finish are called from the training thread, between steps, never per element. Finish is
// idempotent, and Applies after it fail.
#pragma once

#include <span>

#include "core/dist/ps_client.h"
#include "core/status.h"
#include "core/train/strategy.h"

namespace dtrain::dist {

class PsStrategy : public train::Strategy {
 public:
  // Says hello to every shard and receives their current parameters into `params`. `step`: the
  // steps the replica completed (its trainer's position), which an elastic job's shard checks.
  virtual Status Connect(std::span<float> params, std::int64_t step) = 0;
  // Every shard's parameters and optimizer state between this replica's steps (see each
  // strategy for how consistent a cut it is).
  virtual Result<PsSnapshot> Snapshot() = 0;
  // Says goodbye to every shard.
  virtual Status Finish() = 0;
  // Whether a checkpoint keeps the shards' version vectors (PsSnapshot::clocks), for the clocks
  // to go on from them after a resume: the async modes, where each shard counts every replica's
  // pushes.
  virtual bool KeepsClocks() const = 0;
};

}  // namespace dtrain::dist
