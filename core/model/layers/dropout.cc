// dropout (inverted): while training, each value is zeroed with probability `rate` and the rest
// scaled by 1 / (1 - rate); at evaluation the identity. Value i's fate is a pure function of
// (pass.noise_seed, i), so a pass is reproducible and Backward needs no stored mask.
#include <algorithm>
#include <cstdio>
#include <string>

#include "core/data/random.h"
#include "core/model/graph_writer.h"
#include "core/model/layer_type.h"

namespace dtrain::model::layers {
namespace dropout_layer {

class Dropout final : public Layer {
 public:
  Dropout(Shape input, float rate)
      : Layer(input, input),
        rate_(rate),
        keep_scale_(1.0f / (1.0f - rate)),
        threshold_(static_cast<std::uint64_t>(static_cast<double>(rate) * 0x1.0p64)) {}

  void Forward(const float*, const float* in, float* out, const LayerPass& pass) const override {
    Apply(in, out, pass);
  }

  void Backward(const float*, const float*, const float*, float* dout, float* din, float*,
                const LayerPass& pass) const override {
    if (din != nullptr) Apply(dout, din, pass);
  }

  // At inference dropout is the identity: no node.
  std::string WriteGraph(const float*, const std::string& in, GraphWriter&) const { return in; }

 private:
  // out = in * mask / (1 - rate), or a copy when not training.
  void Apply(const float* in, float* out, const LayerPass& pass) const {
    const std::size_t n = static_cast<std::size_t>(pass.rows) * input().Size();
    if (!pass.training || rate_ == 0.0f) {
      std::copy(in, in + n, out);
      return;
    }
    const std::uint64_t base = data::SplitMix64::Finalize(pass.noise_seed);
    for (std::size_t i = 0; i < n; ++i) {
      const bool dropped = data::SplitMix64::Finalize(base + i) < threshold_;
      out[i] = dropped ? 0.0f : in[i] * keep_scale_;
    }
  }

  float rate_, keep_scale_;
  std::uint64_t threshold_;  // a value's draw below it drops the value
};

Result<std::unique_ptr<Layer>> MakeDropout(const LayerSpec& spec, Shape input, int /*outputs*/) {
  if (!(spec.rate >= 0.0f && spec.rate < 1.0f)) {
    return Status::Error("dropout rate must be in [0, 1), got " + std::to_string(spec.rate));
  }
  return std::unique_ptr<Layer>(std::make_unique<Dropout>(input, spec.rate));
}

std::string Summary(const LayerSpec& layer, int /*outputs*/) {
  char rate[32];
  std::snprintf(rate, sizeof rate, "dropout %g", static_cast<double>(layer.rate));
  return rate;
}

constexpr LayerSpelling kNames[] = {{"dropout", {.kind = LayerKind::kDropout, .rate = 0.5f}}};
constexpr LayerKey kKeys[] = {FloatKey("rate", &LayerSpec::rate, {0.0, 1.0, false, true})};

}  // namespace dropout_layer

extern constexpr LayerType kDropoutLayer{.kind = LayerKind::kDropout,
                                         .spellings = dropout_layer::kNames,
                                         .keys = dropout_layer::kKeys,
                                         .make = dropout_layer::MakeDropout,
                                         .write_graph = WriteGraphOf<dropout_layer::Dropout>,
                                         .summary = dropout_layer::Summary};

}  // namespace dtrain::model::layers
