// batchnorm: each channel normalised over the batch (and, for images, over every position),
// then scaled and shifted: y = gamma * (x - mean) / sqrt(var + eps) + beta (Ioffe & Szegedy,
// 2015). Training uses the batch's mean and (biased) variance; evaluation the running ones,
// which UpdateStatistics moves toward each training batch's (unbiased variance) by `momentum`.
// Parameters, C = channels: gamma [C] (1 at start), beta [C] (0), running mean [C] (0) and
// running variance [C] (1); the running statistics' gradient is always 0 and nothing decays.
// State: the batch's mean, 1 / sqrt(var + eps) and variance [C each], then its count.
#include <algorithm>
#include <cmath>

#include "core/model/graph_writer.h"
#include "core/model/layer_type.h"

namespace dtrain::model::layers {
namespace batchnorm_layer {

class BatchNorm final : public Layer {
 public:
  BatchNorm(Shape input, float momentum, float epsilon)
      : Layer(input, input),
        c_(static_cast<std::size_t>(input.channels)),
        positions_(static_cast<std::size_t>(input.height) * static_cast<std::size_t>(input.width)),
        momentum_(momentum),
        epsilon_(epsilon) {}

  std::size_t NumParams() const override { return 4 * c_; }
  std::size_t StateFloats() const override { return 3 * c_ + 1; }
  std::size_t ScratchFloats(int) const override { return 4 * c_; }  // 2 C doubles
  ParamRange RunningStatistics() const override { return {2 * c_, 2 * c_}; }
  float InitialParam(std::size_t i) const override {
    return i < c_ || i >= 3 * c_ ? 1.0f : 0.0f;  // gamma and the running variance start at 1
  }

  void Forward(const float* params, const float* in, float* out,
               const LayerPass& pass) const override {
    const float* gamma = params;
    const float* beta = params + c_;
    const std::size_t values = static_cast<std::size_t>(pass.rows) * positions_;
    if (!pass.training) {
      const float* mean = params + 2 * c_;
      const float* var = params + 3 * c_;
      float* scale = pass.scratch;
      float* shift = pass.scratch + c_;
      for (std::size_t c = 0; c < c_; ++c) {
        scale[c] = gamma[c] / std::sqrt(var[c] + epsilon_);
        shift[c] = beta[c] - mean[c] * scale[c];
      }
      Affine(in, out, values, scale, shift);
      return;
    }
    float* mean = pass.state;
    float* inv_std = pass.state + c_;
    float* var = pass.state + 2 * c_;
    auto* sum = reinterpret_cast<double*>(pass.scratch);  // 2 C doubles: sums, then squares
    auto* squares = sum + c_;
    std::fill(sum, sum + 2 * c_, 0.0);
    for (std::size_t v = 0; v < values; ++v) {
      const float* x = in + v * c_;
      for (std::size_t c = 0; c < c_; ++c) sum[c] += x[c];
    }
    const double n = static_cast<double>(values);
    for (std::size_t c = 0; c < c_; ++c) mean[c] = static_cast<float>(sum[c] / n);
    for (std::size_t v = 0; v < values; ++v) {  // two passes: no cancellation
      const float* x = in + v * c_;
      for (std::size_t c = 0; c < c_; ++c) {
        const double d = static_cast<double>(x[c]) - mean[c];
        squares[c] += d * d;
      }
    }
    for (std::size_t c = 0; c < c_; ++c) {
      var[c] = static_cast<float>(squares[c] / n);
      inv_std[c] = 1.0f / std::sqrt(var[c] + epsilon_);
    }
    pass.state[3 * c_] = static_cast<float>(values);
    float* scale = pass.scratch;  // the doubles are spent
    float* shift = pass.scratch + c_;
    for (std::size_t c = 0; c < c_; ++c) {
      scale[c] = gamma[c] * inv_std[c];
      shift[c] = beta[c] - mean[c] * scale[c];
    }
    Affine(in, out, values, scale, shift);
  }

  void Backward(const float* params, const float* in, const float*, float* dout, float* din,
                float* dparams, const LayerPass& pass) const override {
    const float* gamma = params;
    const float* mean = pass.state;
    const float* inv_std = pass.state + c_;
    float* dgamma = dparams;
    float* dbeta = dparams + c_;
    std::fill(dparams, dparams + 4 * c_, 0.0f);
    const std::size_t values = static_cast<std::size_t>(pass.rows) * positions_;
    for (std::size_t v = 0; v < values; ++v) {
      const float* x = in + v * c_;
      const float* g = dout + v * c_;
      for (std::size_t c = 0; c < c_; ++c) {
        dbeta[c] += g[c];
        dgamma[c] += g[c] * (x[c] - mean[c]) * inv_std[c];
      }
    }
    if (din == nullptr) return;
    // dx = gamma / sqrt(var + eps) / n * (n * dy - dbeta - x_hat * dgamma)
    const float n = static_cast<float>(values);
    for (std::size_t v = 0; v < values; ++v) {
      const float* x = in + v * c_;
      const float* g = dout + v * c_;
      float* d = din + v * c_;
      for (std::size_t c = 0; c < c_; ++c) {
        const float x_hat = (x[c] - mean[c]) * inv_std[c];
        d[c] = gamma[c] * inv_std[c] / n * (n * g[c] - dbeta[c] - x_hat * dgamma[c]);
      }
    }
  }

  // BatchNormalization over the channel axis (1: an image's C, a flat value's features) with
  // the running statistics.
  std::string WriteGraph(const float* params, const std::string& in, GraphWriter& graph) const {
    const auto c = static_cast<std::int64_t>(c_);
    std::vector<std::string> inputs{in};
    for (std::size_t part = 0; part < 4; ++part) {  // gamma, beta, mean, variance
      inputs.push_back(graph.Constant({params + part * c_, params + (part + 1) * c_}, {c}));
    }
    return graph.Node("BatchNormalization", std::move(inputs), {{"epsilon", epsilon_}});
  }

  void UpdateStatistics(float* params, const float* state) const override {
    const float* mean = state;
    const float* var = state + 2 * c_;
    const float n = state[3 * c_];
    const float unbiased = n > 1.0f ? n / (n - 1.0f) : 1.0f;
    float* running_mean = params + 2 * c_;
    float* running_var = params + 3 * c_;
    for (std::size_t c = 0; c < c_; ++c) {
      running_mean[c] += momentum_ * (mean[c] - running_mean[c]);
      running_var[c] += momentum_ * (var[c] * unbiased - running_var[c]);
    }
  }

 private:
  // out = in * scale + shift, channel by channel.
  void Affine(const float* in, float* out, std::size_t values, const float* scale,
              const float* shift) const {
    for (std::size_t v = 0; v < values; ++v) {
      const float* x = in + v * c_;
      float* y = out + v * c_;
      for (std::size_t c = 0; c < c_; ++c) y[c] = x[c] * scale[c] + shift[c];
    }
  }

  std::size_t c_, positions_;
  float momentum_, epsilon_;
};

Result<std::unique_ptr<Layer>> MakeBatchNorm(const LayerSpec& spec, Shape input, int /*outputs*/) {
  if (!(spec.momentum > 0.0f && spec.momentum <= 1.0f)) {
    return Status::Error("batchnorm momentum must be in (0, 1]");
  }
  if (!(spec.epsilon > 0.0f && spec.epsilon <= 1.0f)) {
    return Status::Error("batchnorm eps must be in (0, 1]");
  }
  return std::unique_ptr<Layer>(std::make_unique<BatchNorm>(input, spec.momentum, spec.epsilon));
}

// momentum and eps start at LayerSpec's defaults.
constexpr LayerSpelling kNames[] = {{"batchnorm", {.kind = LayerKind::kBatchNorm}}};
constexpr KeyRange kUnitOpenClosed{0.0, 1.0, true, false};
constexpr LayerKey kKeys[] = {FloatKey("momentum", &LayerSpec::momentum, kUnitOpenClosed),
                              FloatKey("eps", &LayerSpec::epsilon, kUnitOpenClosed)};

}  // namespace batchnorm_layer

extern constexpr LayerType kBatchNormLayer{.kind = LayerKind::kBatchNorm,
                                           .spellings = batchnorm_layer::kNames,
                                           .keys = batchnorm_layer::kKeys,
                                           .make = batchnorm_layer::MakeBatchNorm,
                                           .write_graph = WriteGraphOf<batchnorm_layer::BatchNorm>};

}  // namespace dtrain::model::layers
