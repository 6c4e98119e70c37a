// LayerSpec and Shape: one layer of a layer-list ("sequential") model as the job file and the
// model spec text describe it, and the shape of one sample between layers.
//
//   LayerSpec conv{.kind = LayerKind::kConv2d, .filters = 32, .kernel = 5, .padding =
//   kSamePadding}; std::string text = FormatLayerSpec(conv);  //
//   "conv2d,filters=32,kernel=5,stride=1,padding=same,..." Result<LayerSpec> back =
//   ParseLayerSpec(text);
//
// A sample's values are stored height, width, channel (channels interleaved, as image files
// store pixels): element (h, w, c) of a Shape{C, H, W} sits at (h * W + w) * C + c. A flat vector
// of n features is Shape{n, 1, 1}. Plain value types.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/math/elementwise.h"
#include "core/status.h"

namespace dtrain::model {

struct Shape {
  int channels = 1, height = 1, width = 1;

  std::size_t Size() const {
    return static_cast<std::size_t>(channels) * static_cast<std::size_t>(height) *
           static_cast<std::size_t>(width);
  }
  bool Flat() const { return height == 1 && width == 1; }
  bool operator==(const Shape&) const = default;
};

// "1x28x28" (channels x height x width); a flat shape prints as its size alone.
std::string FormatShape(Shape shape);
// "1x28x28" or "784".
Result<Shape> ParseShape(std::string_view text);

enum class LayerKind {
  kConv2d,
  kMaxPool2d,
  kAvgPool2d,
  kFlatten,
  kDense,
  kDropout,
  kBatchNorm,
  kActivation,  // relu, tanh, sigmoid as a layer of their own
};

inline constexpr int kSamePadding = -1;  // LayerSpec::padding: output size = ceil(input / stride)

struct LayerSpec {
  LayerKind kind = LayerKind::kDense;
  int units = 0;      // dense: outputs; 0 on the last layer: the model's outputs
  int filters = 0;    // conv2d: output channels
  int kernel = 0;     // conv2d: square kernel side; pools: window side
  int stride = 0;     // conv2d: 1 when 0; pools: the window side when 0
  int padding = 0;    // conv2d: zeros on each border, or kSamePadding
  float rate = 0.0f;  // dropout: the fraction of values dropped while training, [0, 1)
  // batchnorm: the weight of a step's batch statistics in the running ones, (0, 1]; and the
  // epsilon added to the variance.
  float momentum = 0.1f;
  float epsilon = 1e-5f;
  // dense and conv2d: applied to their output; kActivation: the layer's function.
  math::Activation activation = math::Activation::kIdentity;

  bool operator==(const LayerSpec&) const = default;
};

// The job file's layer type name: "conv2d", ..., and for kActivation its function ("relu").
std::string LayerTypeName(const LayerSpec& layer);
// A job-file type name → a LayerSpec of that kind with its defaults; the error lists the choices.
Result<LayerSpec> LayerOfType(std::string_view name);
std::string_view LayerTypeChoices();

// One word of the model spec text, without spaces: the type name, then its keys.
std::string FormatLayerSpec(const LayerSpec& layer);
Result<LayerSpec> ParseLayerSpec(std::string_view text);

}  // namespace dtrain::model
