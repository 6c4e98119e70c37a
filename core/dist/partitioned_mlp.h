// PartitionedMlp: one partition of an MLP replica split over several processes (model
// parallelism), as a Network its Trainer trains: it holds only its partition's parameters,
// gradient and (in the Trainer) optimizer state, and exchanges activations and gradients with the
// replica's other partitions through a PartitionExchange.
//
//   PartitionPlan plan = PlanPartitions(spec, PartitionKind::kLayers, 2).value();
//   PartitionExchange ex(part, 2, links.left, links.right);
//   PartitionedMlp net(spec, plan, ex, /*micro_batches=*/8, /*capacity=*/batch_size);
//   Trainer trainer(net, options, data, &test, scaling, strategy);   // on every partition
//
// "layers" (a pipeline): partition p computes its consecutive layers; stage 0 reads the batch,
// each stage sends its output to the next, the last computes the loss and each sends the
// gradient of its input back. The batch is split into `micro_batches` near-equal micro-batches
// that flow through the stages so that they work at once (GPipe's schedule: every micro-batch
// forward, then every one backward); their gradients add up to the batch's, and the optimizer
// steps once per batch, as without the pipeline. Backward messages carry the batch's loss, so
// every stage returns it.
// "tensor": every layer's output units are split; each partition computes its units of a layer
// from the whole input, and the layer's output is all-gathered (held in block layout: partition
// q's units of all rows, then partition q + 1's) for the next layer; backward, each partition
// computes its share of the gradient of the layer's input and a reduce-scatter sums those shares
// into each partition's units. Every partition computes the loss from the gathered outputs.
// `micro_batches` must be 1.
//
// The gradients equal the unpartitioned model's up to float rounding (sums taken in another
// order). Init gives each partition exactly its part of Model::Init's values. Errors come only
// from the exchange (a peer that died or is silent). One thread at a time.
#pragma once

#include <cstddef>
#include <vector>

#include "core/dist/partition_exchange.h"
#include "core/math/buffer.h"
#include "core/model/network.h"
#include "core/model/partition_plan.h"

namespace dtrain::dist {

class PartitionedMlp final : public model::Network {
 public:
  PartitionedMlp(model::ModelSpec spec, model::PartitionPlan plan, PartitionExchange& exchange,
                 int micro_batches, int capacity);

  const model::ModelSpec& spec() const override { return model_.spec(); }
  std::size_t NumParams() const override { return plan_.Size(part_); }
  void Init(std::span<float> params, std::uint64_t seed) const override;
  Result<model::LossValue> ForwardBackward(const float* params, const float* x, const float* y,
                                           int rows, float weight_decay, float* grad) override;
  Result<model::LossValue> Evaluate(const float* params, const float* x, const float* y,
                                    int rows) override;
  Result<double> WeightDecayPenalty(const float* params, float weight_decay) override;
  Result<double> SquaredNorm(std::span<const float> local_grad) override;
  Result<int> AgreeStop(int wanted) override;
  std::optional<model::PartitionTraffic> TakeTraffic() override;

  const model::PartitionPlan& plan() const { return plan_; }
  int part() const { return part_; }

 private:
  // This partition's share of one layer of the model.
  struct Share {
    int layer = 0;       // its index in the model
    int in = 0;          // the layer's input width (all of it)
    int out = 0;         // the layer's output width (all of it)
    int cols = 0;        // this partition's output units
    int first_col = 0;   // the first of them
    std::size_t weight = 0;  // W [in x cols] in this partition's parameters
    std::size_t bias = 0;    // b [cols]
    math::Activation activation = math::Activation::kIdentity;
  };
  // An array of `rows` rows held as blocks of columns: block q is rows x widths[q], contiguous,
  // after the blocks before it (one block: plain row-major).
  struct Blocks {
    const float* data = nullptr;
    std::vector<int> widths;
  };

  Blocks InputOf(std::size_t share, const float* x) const;  // tensor: the gathered input
  // y[rows x s.cols] = input * W + b, activated (one Gemm per input block).
  void Forward(const Share& s, const float* params, const Blocks& input, int rows, float* y) const;
  // dW (+)= input^T delta, db (+)= column sums; `accumulate`: add to what is there.
  void Gradient(const Share& s, const Blocks& input, const float* delta, int rows,
                bool accumulate, float* grad) const;
  // dx[rows x in] (blocks as `input_widths`) = delta * W^T.
  void InputGradient(const Share& s, const float* params, const float* delta, int rows,
                     const std::vector<int>& input_widths, float* dx) const;
  void AddWeightDecay(const float* params, float weight_decay, float* grad) const;
  std::vector<std::size_t> Bounds(const std::vector<int>& widths, int rows) const;
  std::vector<int> Widths(int layer) const;  // the blocks of layer `layer`'s output

  Result<model::LossValue> TensorPass(const float* params, const float* x, const float* y,
                                      int rows, float weight_decay, float* grad);
  Result<model::LossValue> PipelinePass(const float* params, const float* x, const float* y,
                                        int rows, float weight_decay, float* grad);
  Result<model::LossValue> PipelineEvaluate(const float* params, const float* x, const float* y,
                                            int rows);
  // The last stage's loss of a block of outputs, its gradient scaled by `scale` into `delta`.
  model::LossValue StageLoss(const float* out, const float* y, int rows, float scale,
                             float* delta) const;

  model::Model model_;  // the whole model's shapes (it holds no parameters)
  model::PartitionPlan plan_;
  PartitionExchange& exchange_;
  int part_;
  int micro_batches_;
  [[maybe_unused]] int capacity_;  // the rows the scratch holds: read by asserts only
  std::vector<Share> shares_;  // the layers this partition computes, in order
  // Scratch for up to capacity_ rows: each share's output (tensor: the whole gathered layer),
  // the stage's input (pipeline), gradients of outputs and inputs, logits and their gradient.
  std::vector<math::FloatBuffer> outputs_;
  math::FloatBuffer input_, delta_a_, delta_b_, dx_, logits_, loss_grad_, message_;
};

}  // namespace dtrain::dist
