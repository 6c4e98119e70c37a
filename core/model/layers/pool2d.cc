// maxpool2d and avgpool2d: each channel's k x k windows, stride s (k by default), no padding;
// output side (side - k) / s + 1. Forward and backward each run through oneDNN (math::DnnlPool)
// or this file's loops, whichever measured faster for the layer's shape (onednn_paths.h); both
// give the same values up to float rounding. The loops run over channels innermost (they are
// contiguous), so they vectorise. Max-pooling's backward sends each output's gradient to the
// first input of its window that equals the output (the largest), found again from the input:
// nothing is stored.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/math/dnnl_pool.h"
#include "core/model/graph_writer.h"
#include "core/model/layer_type.h"
#include "core/model/onednn_paths.h"

namespace dtrain::model::layers {
namespace pool2d_layer {

class Pool2d final : public Layer {
 public:
  Pool2d(Shape input, Shape output, int kernel, int stride, bool max)
      : Layer(input, output),
        kernel_(kernel),
        stride_(stride),
        max_(max),
        dnnl_({.channels = input.channels,
               .height = input.height,
               .width = input.width,
               .out_height = output.height,
               .out_width = output.width,
               .kernel = kernel,
               .stride = stride,
               .max = max}) {}

  std::size_t ScratchFloats(int /*capacity*/) const override {
    return static_cast<std::size_t>(input().channels);  // max: which channels are routed
  }

  void Forward(const float*, const float* in, float* out, const LayerPass& pass) const override {
    if (Paths(pass.rows)[kForward]) {
      dnnl_.Forward(in, out, pass.rows);
    } else {
      OwnForward(in, out, pass.rows);
    }
  }

  std::string WriteGraph(const float*, const std::string& in, GraphWriter& graph) const {
    const std::string pooled =
        graph.Node(max_ ? "MaxPool" : "AveragePool", {ImageValue(graph, in, input())},
                   {{"kernel_shape", std::vector<std::int64_t>{kernel_, kernel_}},
                    {"strides", std::vector<std::int64_t>{stride_, stride_}}});
    return ValueOfShape(graph, pooled, output());
  }

  void Backward(const float*, const float* in, const float* out, float* dout, float* din, float*,
                const LayerPass& pass) const override {
    if (din == nullptr) return;
    if (Paths(pass.rows)[kBackward]) {
      dnnl_.Backward(in, dout, din, pass.rows);
    } else {
      OwnBackward(in, out, dout, din, pass.rows, pass.scratch);
    }
  }

 private:
  enum Product { kForward, kBackward };

  // "maxpool 2 over 32x28x28": what the choice of paths is made for.
  std::string ShapeName() const {
    std::string text = (max_ ? "maxpool " : "avgpool ") + std::to_string(kernel_);
    if (stride_ != kernel_) text += " stride " + std::to_string(stride_);
    return text + " over " + FormatShape(input());
  }

  std::vector<bool> Paths(int rows) const {
    return OnednnProducts(
        rows, 2, shape_name_, "dtrain's loops", [&](int n) { return dnnl_.Available(n); },
        [&] { return Measure(rows); });
  }

  // Each product's time through the loops here over its time through oneDNN, on `rows` rows of
  // made-up values; nullopt when oneDNN has no kernel for the shape.
  std::optional<std::vector<ProductSpeedUp>> Measure(int rows) const {
    if (!dnnl_.Available(rows)) return std::nullopt;
    const std::vector<float> in =
        TimingValues(static_cast<std::size_t>(rows) * input().Size(), /*rectified=*/true);
    std::vector<float> out(static_cast<std::size_t>(rows) * output().Size()), din(in.size()),
        scratch(ScratchFloats(rows));
    OwnForward(in.data(), out.data(), rows);
    const std::vector<float> dout = TimingValues(out.size(), /*rectified=*/false);
    return std::vector<ProductSpeedUp>{
        {"forward", MeasureSpeedUp([&] { OwnForward(in.data(), out.data(), rows); },
                                   [&] { dnnl_.Forward(in.data(), out.data(), rows); })},
        {"gradient", MeasureSpeedUp(
                         [&] {
                           OwnBackward(in.data(), out.data(), dout.data(), din.data(), rows,
                                       scratch.data());
                         },
                         [&] { dnnl_.Backward(in.data(), dout.data(), din.data(), rows); })}};
  }

  void OwnForward(const float* in, float* out, int rows) const {
    const std::size_t c = Channels();
    const float inv_area = 1.0f / static_cast<float>(kernel_ * kernel_);
    ForEachWindow(rows, [&](std::size_t to, std::size_t corner) {
      float* o = out + to;
      std::copy(in + corner, in + corner + c, o);
      bool first = true;
      ForEachCell(corner, [&](std::size_t at) {
        if (first) {
          first = false;
          return;
        }
        const float* i = in + at;
        if (max_) {
          for (std::size_t ch = 0; ch < c; ++ch) o[ch] = std::max(o[ch], i[ch]);
        } else {
          for (std::size_t ch = 0; ch < c; ++ch) o[ch] += i[ch];
        }
      });
      if (!max_) {
        for (std::size_t ch = 0; ch < c; ++ch) o[ch] *= inv_area;
      }
    });
  }

  // din from dout, given the pass's input and output; `scratch` holds ScratchFloats.
  void OwnBackward(const float* in, const float* out, const float* dout, float* din, int rows,
                   float* scratch) const {
    // Windows that tile the input exactly write each input cell once: no zeroing, no adding.
    const bool tiled = Tiled();
    if (!tiled) std::fill(din, din + static_cast<std::size_t>(rows) * input().Size(), 0.0f);
    const std::size_t c = Channels();
    const float inv_area = 1.0f / static_cast<float>(kernel_ * kernel_);
    float* routed = scratch;  // 1 once a channel's gradient has gone to its max
    ForEachWindow(rows, [&](std::size_t to, std::size_t corner) {
      const float* g = dout + to;
      if (!max_) {
        ForEachCell(corner, [&](std::size_t at) { Spread(g, inv_area, din + at, c, tiled); });
        return;
      }
      std::fill(routed, routed + c, 0.0f);
      ForEachCell(corner, [&](std::size_t at) {
        RouteMax(in + at, out + to, g, din + at, routed, c, tiled);
      });
    });
  }

  std::size_t Channels() const { return static_cast<std::size_t>(input().channels); }
  // Every input cell lies in exactly one window.
  bool Tiled() const {
    return stride_ == kernel_ && input().height % kernel_ == 0 && input().width % kernel_ == 0;
  }

  // One cell of an average window: its share of the window's gradient g.
  static void Spread(const float* __restrict g, float inv_area, float* __restrict d, std::size_t c,
                     bool overwrite) {
    for (std::size_t ch = 0; ch < c; ++ch) d[ch] = (overwrite ? 0.0f : d[ch]) + g[ch] * inv_area;
  }

  // One cell x of a max window with output o: the gradient g goes to the channels where x is the
  // maximum and no earlier cell of the window took it.
  static void RouteMax(const float* __restrict x, const float* __restrict o,
                       const float* __restrict g, float* __restrict d, float* __restrict routed,
                       std::size_t c, bool overwrite) {
    for (std::size_t ch = 0; ch < c; ++ch) {
      const bool here = routed[ch] == 0.0f && x[ch] == o[ch];
      d[ch] = (overwrite ? 0.0f : d[ch]) + (here ? g[ch] : 0.0f);
      routed[ch] = here ? 1.0f : routed[ch];
    }
  }

  // visit(output offset, input offset of the window's first cell): every window, C values each.
  template <typename Visit>
  void ForEachWindow(int rows, Visit&& visit) const {
    const Shape in = input(), out = output();
    const std::size_t c = Channels();
    std::size_t to = 0;
    for (int s = 0; s < rows; ++s) {
      const std::size_t base = static_cast<std::size_t>(s) * in.Size();
      for (int oh = 0; oh < out.height; ++oh) {
        for (int ow = 0; ow < out.width; ++ow, to += c) {
          visit(to, base + static_cast<std::size_t>((oh * stride_) * in.width + ow * stride_) * c);
        }
      }
    }
  }

  // visit(input offset) of every cell of the window whose first cell is at `corner`, in order.
  template <typename Visit>
  void ForEachCell(std::size_t corner, Visit&& visit) const {
    const std::size_t c = Channels();
    const std::size_t row = static_cast<std::size_t>(input().width) * c;
    for (int kh = 0; kh < kernel_; ++kh) {
      for (int kw = 0; kw < kernel_; ++kw) {
        visit(corner + static_cast<std::size_t>(kh) * row + static_cast<std::size_t>(kw) * c);
      }
    }
  }

  int kernel_, stride_;
  bool max_;
  math::DnnlPool dnnl_;
  std::string shape_name_ = ShapeName();
};

// A stride of 0 (a LayerSpec built in code) is the window side.
Result<std::unique_ptr<Layer>> MakePool2d(const LayerSpec& spec, Shape input, int /*outputs*/) {
  const std::string name = LayerTypeName(spec);
  const int k = spec.kernel;
  const int s = spec.stride > 0 ? spec.stride : k;
  if (k < 1) return Status::Error(name + " needs size >= 1");
  if (k > input.height || k > input.width) {
    return Status::Error(name + " size " + std::to_string(k) + " is larger than its " +
                         std::to_string(input.height) + "x" + std::to_string(input.width) +
                         " input");
  }
  const Shape output{input.channels, (input.height - k) / s + 1, (input.width - k) / s + 1};
  return std::unique_ptr<Layer>(
      std::make_unique<Pool2d>(input, output, k, s, spec.kind == LayerKind::kMaxPool2d));
}

std::string Summary(const LayerSpec& layer, int /*outputs*/) {
  std::string out = (layer.kind == LayerKind::kMaxPool2d ? "maxpool " : "avgpool ") +
                    std::to_string(layer.kernel);
  if (layer.stride != layer.kernel) out += " stride " + std::to_string(layer.stride);
  return out;
}

constexpr LayerSpelling kMaxNames[] = {{"maxpool2d", {.kind = LayerKind::kMaxPool2d, .kernel = 2}}};
constexpr LayerSpelling kAvgNames[] = {{"avgpool2d", {.kind = LayerKind::kAvgPool2d, .kernel = 2}}};
// A job file's stride is the window side unless given.
constexpr LayerKey kKeys[] = {
    IntKey("size", &LayerSpec::kernel, 1, kMaxWindowSide),
    IntKey("stride", &LayerSpec::stride, 1, kMaxWindowSide).SameAs(&LayerSpec::kernel)};

}  // namespace pool2d_layer

extern constexpr LayerType kMaxPool2dLayer{.kind = LayerKind::kMaxPool2d,
                                           .spellings = pool2d_layer::kMaxNames,
                                           .keys = pool2d_layer::kKeys,
                                           .make = pool2d_layer::MakePool2d,
                                           .write_graph = WriteGraphOf<pool2d_layer::Pool2d>,
                                           .summary = pool2d_layer::Summary};
extern constexpr LayerType kAvgPool2dLayer{.kind = LayerKind::kAvgPool2d,
                                           .spellings = pool2d_layer::kAvgNames,
                                           .keys = pool2d_layer::kKeys,
                                           .make = pool2d_layer::MakePool2d,
                                           .write_graph = WriteGraphOf<pool2d_layer::Pool2d>,
                                           .summary = pool2d_layer::Summary};

}  // namespace dtrain::model::layers
