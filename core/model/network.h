// Network: what a Trainer trains — the whole model in this process (LocalNetwork), or this
// process's partition of a model spread over several (dist::PartitionedMlp, model parallelism).
// The Trainer holds this process's share of the parameters (NumParams floats), their gradient
// and the optimizer over them; the network computes the batch's loss and that gradient, talking
// to the other partitions where it has any.
//
//   LocalNetwork net(spec, /*capacity=*/batch_size, /*threads=*/2);
//   net.Init(params, seed);
//   Result<LossValue> v = net.ForwardBackward(params.data(), x, y, rows, 0.0f, grad.data());
//
// Every partition of a replica must make the same calls in the same order with the same batch
// (they exchange activations and gradients inside them); each returns the loss of the whole
// batch. A network may fail only where it talks to its peers. One thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/math/buffer.h"
#include "core/math/elementwise.h"
#include "core/math/thread_team.h"
#include "core/model/loss.h"
#include "core/model/model.h"
#include "core/model/spec.h"
#include "core/optim/optimizer.h"
#include "core/status.h"

namespace dtrain::model {

// What a partition exchanged with the others of its replica over some time.
struct PartitionTraffic {
  double receiving_seconds = 0.0;  // blocked waiting for a peer's activations or gradients
  double sending_seconds = 0.0;    // blocked sending them
  std::uint64_t bytes_sent = 0;
};

class Network {
 public:
  virtual ~Network() = default;

  virtual const ModelSpec& spec() const = 0;  // the whole model's
  virtual std::size_t NumParams() const = 0;  // this process's share
  // This process's parameters as the whole model's Init would make them.
  virtual void Init(std::span<float> params, std::uint64_t seed) const = 0;

  // Loss of the batch (`rows` rows of x, with targets y) and, overwriting `grad`, the gradient of
  // mean loss + wd/2 * |W|^2 with respect to this process's parameters. loss_sum excludes the
  // weight-decay term.
  virtual Result<LossValue> ForwardBackward(const float* params, const float* x, const float* y,
                                            int rows, float weight_decay, float* grad) = 0;
  // ForwardBackward, then optimizer's Step of params (all of this process's) by grad at lr, as
  // one: a network may step each run of the parameters as soon as its gradient is done, while it
  // is in cache (LocalNetwork's row split does). The same bits as the two calls; grad still holds
  // the gradient afterwards.
  virtual Result<LossValue> ForwardBackwardStep(float* params, const float* x, const float* y,
                                                int rows, float weight_decay, float* grad,
                                                optim::Optimizer& optimizer, float lr);
  // Loss (summed over rows) and correct count of a batch, without a gradient.
  virtual Result<LossValue> Evaluate(const float* params, const float* x, const float* y,
                                     int rows) = 0;
  // wd/2 * the sum of the whole model's squared weights.
  virtual Result<double> WeightDecayPenalty(const float* params, float weight_decay) = 0;
  // The squared L2 norm of the whole model's gradient, from this process's share of it.
  virtual Result<double> SquaredNorm(std::span<const float> local_grad);
  // Agrees with the other partitions on whether to stop training after this step: `wanted` is
  // this partition's wish (0: none; larger values win), the result the largest of all (every
  // partition gets the same). Without partitions, `wanted` itself.
  virtual Result<int> AgreeStop(int wanted) { return wanted; }
  // A partition's traffic since the last call; nullopt for the whole model in one process.
  virtual std::optional<PartitionTraffic> TakeTraffic() { return std::nullopt; }
  // The seed the next ForwardBackwards draw their dropout masks from (ignored without dropout).
  virtual void SetNoiseSeed(std::uint64_t /*seed*/) {}
  // After a training step: folds the last ForwardBackward's batch statistics into the running
  // ones in `params` (batchnorm). A network without them leaves `params` alone.
  virtual void UpdateStatistics(std::span<float> /*params*/) {}
  // Where in this process's parameters UpdateStatistics writes: values that are each replica's
  // own, which no exchange of parameters between replicas or with servers replaces.
  virtual std::span<const ParamRange> StatisticRanges() const { return {}; }
  // From now on, each ForwardBackward tells `finished` as the gradient's floats from a layer's
  // first to the end become final (Model::GradientFinished), so that a strategy can exchange them
  // under the rest of the pass. A network whose gradient is only final at the end of its pass
  // (batch slices that are combined last, partitions) never calls it.
  virtual void WatchGradient(Model::GradientFinished /*finished*/) {}
  // The threads a batch's pass is split over (LocalNetwork); 1 for a pass on one thread.
  virtual int BatchSlices() const { return 1; }
  // Those threads, idle between passes, for the trainer's strategy to share; null for one.
  virtual math::ThreadTeam* Team() { return nullptr; }
};

// The whole model, in this process: Model with workspaces for up to `capacity` rows. With
// threads > 1 each batch is split into `threads` contiguous slices of rows whose passes run at
// once on a ThreadTeam, each thread with single-threaded GEMMs, in one of two ways:
//   rows    (every layer SplitsRows: dense, activation, flatten — MLPs, softmax, logistic): the
//           slices share one workspace and go forward and back without the parameter gradient,
//           then each thread computes its part of the parameter gradient from all the rows
//           (Model::ForwardBackwardRows, ParamGradient): no gradient is computed twice.
//   slices  (other models without running statistics: convolutions, pooling, dropout): each
//           slice has its own workspace and gradient, combined as the sum over slices of
//           (slice rows / rows) x slice gradient, in slice order, coordinates shared out.
// Either way a given thread count gives the same bits every run (a different count rounds
// differently). Dropout draws each slice's masks from the step's seed and the slice. A model
// with batchnorm is not split (its batch statistics would become each slice's): its passes run
// whole on the calling thread. A row-split model takes the row pass on one thread too, as one
// slice: ForwardBackwardStep then steps each layer's parameters right after their gradient.
class LocalNetwork final : public Network {
 public:
  LocalNetwork(ModelSpec spec, int capacity, int threads = 1);
  ~LocalNetwork() override;

  const Model& model() const { return model_; }
  // The slices a batch is split into: the threads asked for, or 1 where the model cannot split.
  int Slices() const;
  const ModelSpec& spec() const override { return model_.spec(); }
  std::size_t NumParams() const override { return model_.NumParams(); }
  void Init(std::span<float> params, std::uint64_t seed) const override {
    model_.Init(params, seed);
  }
  Result<LossValue> ForwardBackward(const float* params, const float* x, const float* y, int rows,
                                    float weight_decay, float* grad) override;
  Result<LossValue> ForwardBackwardStep(float* params, const float* x, const float* y, int rows,
                                        float weight_decay, float* grad,
                                        optim::Optimizer& optimizer, float lr) override;
  Result<LossValue> Evaluate(const float* params, const float* x, const float* y,
                             int rows) override;
  Result<double> WeightDecayPenalty(const float* params, float weight_decay) override {
    return model_.WeightDecayPenalty(params, weight_decay);
  }
  void SetNoiseSeed(std::uint64_t seed) override;
  void UpdateStatistics(std::span<float> params) override {
    model_.UpdateStatistics(params.data(), workspaces_.front());
  }
  std::span<const ParamRange> StatisticRanges() const override { return model_.StatisticRanges(); }
  // Watched with one pass (Split::kNone) or row slices; slices of the batch are not.
  void WatchGradient(Model::GradientFinished finished) override { finished_ = std::move(finished); }
  int BatchSlices() const override { return Slices(); }
  math::ThreadTeam* Team() override { return team_.get(); }

 private:
  // Runs pass(slice, first row, rows) over the slices of a batch of `rows` rows at once; a slice
  // of 0 rows (a batch of fewer rows than slices) is not run and counts as a LossValue of 0.
  void ForSlices(int rows, const std::function<void(int, int, int)>& pass);
  // Split::kRows: the slices forward and back, then the parameter gradient in parts, each run
  // of it handed to `done` (if set) by the thread that computed it.
  LossValue RowSplitPass(const float* params, const float* x, const float* y, int rows,
                         float weight_decay, float* grad, const Model::GradientDone& done);
  // Split::kRows, watched: the same pass layer by layer, telling finished_ after each.
  LossValue RowPassByLayer(const float* params, const float* x, const float* y, int rows,
                           float weight_decay, float* grad);
  // Split::kSlices: the slices' gradients into `grad` (slice 0's, weighted in place).
  void CombineSliceGradients(int rows, float* grad);

  enum class Split { kNone, kRows, kSlices };
  Model model_;
  Split split_ = Split::kNone;
  Model::GradientFinished finished_;   // WatchGradient's
  std::vector<Workspace> workspaces_;  // one per slice (kSlices); otherwise one
  std::unique_ptr<math::ThreadTeam> team_;
  std::vector<math::FloatBuffer> slice_grads_;  // slices 1.. (slice 0 writes the caller's grad)
  std::vector<LossValue> slice_values_;
};

// True when a batch of this model may be split over threads (it keeps no running statistics).
bool SplitsBatches(const Model& model);

inline Result<double> Network::SquaredNorm(std::span<const float> local_grad) {
  return math::SquaredNorm(local_grad);
}

inline Result<LossValue> Network::ForwardBackwardStep(float* params, const float* x,
                                                      const float* y, int rows,
                                                      float weight_decay, float* grad,
                                                      optim::Optimizer& optimizer, float lr) {
  Result<LossValue> value = ForwardBackward(params, x, y, rows, weight_decay, grad);
  if (value.ok()) optimizer.Step({params, NumParams()}, {grad, NumParams()}, lr);
  return value;
}

}  // namespace dtrain::model
