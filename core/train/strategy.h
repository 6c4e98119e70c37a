// Strategy: how a replica's gradient becomes new parameters — the seam between the training
// loop (the same for every mode) and the distribution mode (single, sync, async, local).
//
//   LocalStrategy single(MakeOptimizer(opts, 0, n), clip_norm);
//   single.Apply(step, params, grad, lr, {rows, rows});
//
// One thread at a time (the training thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/optim/optimizer.h"
#include "core/status.h"

namespace dtrain::train {

// This replica's part of a step's batch: `rows` of the `total_rows` all replicas trained on
// (equal for one replica). `grad` is the mean over this replica's rows.
struct StepShare {
  std::size_t rows = 0;
  std::size_t total_rows = 0;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Consumes this replica's gradient of step `step` (it may be modified, e.g. clipped or
  // averaged) and updates `params` in place.
  virtual Status Apply(std::int64_t step, std::span<float> params, std::span<float> grad,
                       float lr, const StepShare& share) = 0;
  // The optimizer whose state a checkpoint holds, or null if it lives elsewhere (e.g. on
  // parameter-server shards).
  virtual optim::Optimizer* LocalOptimizer() = 0;
};

// mode = "single": clip by global norm (if clip_norm > 0), then a local optimizer step.
class LocalStrategy final : public Strategy {
 public:
  LocalStrategy(std::unique_ptr<optim::Optimizer> optimizer, float clip_norm);
  Status Apply(std::int64_t step, std::span<float> params, std::span<float> grad, float lr,
               const StepShare& share) override;
  optim::Optimizer* LocalOptimizer() override { return optimizer_.get(); }

 private:
  std::unique_ptr<optim::Optimizer> optimizer_;
  float clip_norm_;
};

}  // namespace dtrain::train
