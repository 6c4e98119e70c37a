// conv2d: F filters of k x k x C over the input, stride s, zero padding. Each of its three
// products (the forward, the input gradient, the weight gradient) runs either through oneDNN
// (math::DnnlConv) or lowered to GEMMs through im2col, whichever measured faster on this CPU for
// the layer's shape (onednn_paths.h; DTRAIN_CONV forces one). Both give the same values up to float
// rounding; bias and activation are added here on either path. In a bf16 process (precision.h)
// both round the products' inputs to bf16, except that a product oneDNN's float32 kernel runs
// faster than its bf16 one runs in float32 (timed too; named in the job's log).
// im2col: one GEMM per chunk of samples. Row r of a chunk's column matrix is the patch under
// output position r ((kh, kw, c) order, zeros outside the input), so
//   out [positions x F] = col [positions x k*k*C] * W [k*k*C x F],  then + b, activation.
// Backward recomputes each chunk's columns (they are never kept for the whole batch):
//   dW += col^T * dout,  db = column sums of dout,  dcol = dout * W^T, scattered back onto din.
// Parameters: W [k*k*C x F] row-major (HWIO), then b [F].
#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/math/dnnl_conv.h"
#include "core/math/gemm.h"
#include "core/math/precision.h"
#include "core/model/graph_writer.h"
#include "core/model/layer_type.h"
#include "core/model/onednn_paths.h"

namespace dtrain::model::layers {
namespace conv2d_layer {

// How one product of a conv2d pass runs: through oneDNN, with its inputs in `precision`, or
// through im2col (its GEMMs in the process's precision).
struct ConvProduct {
  bool onednn = false;
  math::Precision precision = math::Precision::kFp32;
};
struct ConvProducts {
  ConvProduct forward, input_gradient, weight_gradient;
};

// A conv2d pass's products, as timed and as its log line names them.
enum Product { kForward, kInputGradient, kWeightGradient };
constexpr const char* kProductNames[] = {"forward", "input gradient", "weight gradient"};

// Made-up operands of a pass, to time products on.
struct TimingPass {
  std::vector<float> in, params, dout, out, din, dparams, scratch;
};

using math::Trans;

constexpr int kMaxFilters = 1 << 16;
constexpr int kMaxKernel = kMaxWindowSide;
constexpr std::size_t kMaxPatch = std::size_t{1} << 20;
constexpr auto kMaxOutput = static_cast<std::size_t>(kMaxLayerWidth);
constexpr std::size_t kColumnFloats = std::size_t{1} << 18;  // a chunk's columns: 1 MiB at most

struct Geometry {
  int kernel, stride, pad_top, pad_left;
};

class Conv2d final : public Layer {
 public:
  Conv2d(Shape input, Shape output, Geometry g, math::Activation activation)
      : Layer(input, output),
        g_(g),
        patch_(g.kernel * g.kernel * input.channels),
        positions_(output.height * output.width),
        activation_(activation),
        dnnl_({.channels = input.channels,
               .height = input.height,
               .width = input.width,
               .filters = output.channels,
               .out_height = output.height,
               .out_width = output.width,
               .kernel = g.kernel,
               .stride = g.stride,
               .pad_top = g.pad_top,
               .pad_left = g.pad_left}) {}

  std::size_t NumParams() const override { return NumWeights() + Filters(); }
  std::size_t NumWeights() const override { return static_cast<std::size_t>(patch_) * Filters(); }
  int FanIn() const override { return patch_; }
  int FanOut() const override { return g_.kernel * g_.kernel * output().channels; }
  math::Activation OutputActivation() const override { return activation_; }
  std::size_t ScratchFloats(int capacity) const override {
    return static_cast<std::size_t>(std::min(capacity, ChunkSamples())) * ColumnFloatsPerSample();
  }

  void Forward(const float* params, const float* in, float* out,
               const LayerPass& pass) const override {
    if (const ConvProduct forward = Paths(pass.rows).forward; forward.onednn) {
      dnnl_.Forward(in, params, out, pass.rows, forward.precision);
    } else {
      Im2colForward(params, in, out, pass.rows, pass.scratch);
    }
    math::AddBiasActivate(out, pass.rows * positions_, output().channels, params + NumWeights(),
                          activation_);
  }

  // Conv with the weights in ONNX's order (filter, channel, kernel row, kernel column) and the
  // padding made explicit (the bottom and right pads what the output size leaves), then the
  // activation.
  std::string WriteGraph(const float* params, const std::string& in, GraphWriter& graph) const {
    const int c = input().channels, f = output().channels, k = g_.kernel;
    std::vector<float> w(NumWeights());
    for (int o = 0; o < f; ++o) {
      for (int ch = 0; ch < c; ++ch) {
        for (int kh = 0; kh < k; ++kh) {
          for (int kw = 0; kw < k; ++kw) {
            const std::size_t row = static_cast<std::size_t>((kh * k + kw) * c + ch);
            w[((static_cast<std::size_t>(o) * c + ch) * k + kh) * k + kw] = params[row * f + o];
          }
        }
      }
    }
    const auto end_pad = [&](int in_side, int out_side, int begin) {
      return static_cast<std::int64_t>(
          std::max(0, (out_side - 1) * g_.stride + k - in_side - begin));
    };
    const std::string conv = graph.Node(
        "Conv",
        {ImageValue(graph, in, input()), graph.Constant(std::move(w), {f, c, k, k}),
         graph.Constant({params + NumWeights(), params + NumParams()}, {f})},
        {{"kernel_shape", std::vector<std::int64_t>{k, k}},
         {"strides", std::vector<std::int64_t>{g_.stride, g_.stride}},
         {"pads", std::vector<std::int64_t>{g_.pad_top, g_.pad_left,
                                            end_pad(input().height, output().height, g_.pad_top),
                                            end_pad(input().width, output().width, g_.pad_left)}}});
    return ValueOfShape(graph, WriteActivation(graph, conv, activation_), output());
  }

  void Backward(const float* params, const float* in, const float* out, float* dout, float* din,
                float* dparams, const LayerPass& pass) const override {
    const int f = output().channels;
    const int rows = pass.rows * positions_;
    math::ActivationBackward(out, dout, static_cast<std::size_t>(rows) * f, activation_);
    math::ColumnSums(dout, rows, f, 0.0f, dparams + NumWeights());
    const ConvProducts paths = Paths(pass.rows);
    if (paths.weight_gradient.onednn) {
      dnnl_.BackwardWeights(in, dout, dparams, pass.rows, paths.weight_gradient.precision);
    } else {
      Im2colWeightGradient(in, dout, dparams, pass.rows, pass.scratch);
    }
    if (din == nullptr) return;
    if (paths.input_gradient.onednn) {
      dnnl_.BackwardData(dout, params, din, pass.rows, paths.input_gradient.precision);
    } else {
      Im2colInputGradient(params, dout, din, pass.rows, pass.scratch);
    }
  }

 private:
  std::size_t Filters() const { return static_cast<std::size_t>(output().channels); }

  // "conv2d 64x5x5 over 32x14x14 to 64x14x14": what the choice of paths is made for.
  std::string ShapeName() const {
    const std::string k = std::to_string(g_.kernel);
    std::string text = "conv2d " + std::to_string(output().channels) + "x" + k + "x" + k;
    if (g_.stride > 1) text += " stride " + std::to_string(g_.stride);
    return text + " over " + FormatShape(input()) + " to " + FormatShape(output());
  }

  // How each product of a pass of `rows` rows runs.
  ConvProducts Paths(int rows) const {
    const std::array<math::Precision, 3> kernels = KernelPrecisions(rows);
    const std::vector<bool> onednn = OnednnProducts(
        rows, 3, shape_names_[math::CurrentPrecision() == math::Precision::kBf16], "im2col",
        [&](int n) {
          return std::ranges::all_of(kernels, [&](auto p) { return dnnl_.Available(n, p); });
        },
        [&] { return Measure(rows, kernels); });
    return {{onednn[0], kernels[0]}, {onednn[1], kernels[1]}, {onednn[2], kernels[2]}};
  }

  // The precision of the inputs of each product where oneDNN runs it: the process's, except in
  // a bf16 process whose paths are chosen by timing (DTRAIN_CONV unset), where a product whose
  // float32 kernel times faster than its bf16 one runs that (a first layer's weight gradient,
  // over one input channel, can).
  std::array<math::Precision, 3> KernelPrecisions(int rows) const {
    using math::Precision;
    const Precision process = math::CurrentPrecision();
    std::array<Precision, 3> kernels{process, process, process};
    if (process != Precision::kBf16 || CurrentPathMode() != PathMode::kAuto || rows == 0 ||
        !dnnl_.Available(rows, Precision::kBf16) || !dnnl_.Available(rows, Precision::kFp32)) {
      return kernels;
    }
    const std::vector<bool> bf16 = ChosenProducts(
        shape_names_[1] + ", oneDNN's kernels", "float32", [&] { return MeasureKernels(rows); },
        "bf16");
    for (std::size_t i = 0; i < std::min(bf16.size(), kernels.size()); ++i) {
      if (!bf16[i]) kernels[i] = Precision::kFp32;
    }
    return kernels;
  }

  TimingPass MadeUpPass(int rows) const {
    TimingPass t;
    t.in = TimingValues(static_cast<std::size_t>(rows) * input().Size(), /*rectified=*/true);
    t.params = TimingValues(NumParams(), false);
    t.dout = TimingValues(static_cast<std::size_t>(rows) * output().Size(), false);
    t.out.resize(t.dout.size());
    t.din.resize(t.in.size());
    t.dparams.resize(t.params.size());
    t.scratch.resize(ScratchFloats(rows));
    return t;
  }

  // Runs product `product` (kForward, kInputGradient, kWeightGradient) of the made-up pass `t`
  // through oneDNN with inputs in `*onednn`, or through im2col where it is nullopt.
  void RunProduct(TimingPass& t, int rows, int product,
                  std::optional<math::Precision> onednn) const {
    switch (product) {
      case kForward:
        if (onednn) return dnnl_.Forward(t.in.data(), t.params.data(), t.out.data(), rows, *onednn);
        return Im2colForward(t.params.data(), t.in.data(), t.out.data(), rows, t.scratch.data());
      case kInputGradient:
        if (onednn) {
          return dnnl_.BackwardData(t.dout.data(), t.params.data(), t.din.data(), rows, *onednn);
        }
        return Im2colInputGradient(t.params.data(), t.dout.data(), t.din.data(), rows,
                                   t.scratch.data());
      default:
        if (onednn) {
          return dnnl_.BackwardWeights(t.in.data(), t.dout.data(), t.dparams.data(), rows,
                                       *onednn);
        }
        return Im2colWeightGradient(t.in.data(), t.dout.data(), t.dparams.data(), rows,
                                    t.scratch.data());
    }
  }

  // Where a product runs for RunProduct: oneDNN with inputs in a precision, or im2col (nullopt).
  using PathOf = std::function<std::optional<math::Precision>(int product)>;

  // Each product's time along the paths `slow` names over its time along `fast`'s, on a made-up
  // pass of `rows` rows, in kProductNames' order.
  std::vector<ProductSpeedUp> SpeedUps(int rows, const PathOf& slow, const PathOf& fast) const {
    TimingPass t = MadeUpPass(rows);
    std::vector<ProductSpeedUp> speed_ups;
    for (int product : {kForward, kInputGradient, kWeightGradient}) {
      speed_ups.push_back(
          {kProductNames[product],
           MeasureSpeedUp([&] { RunProduct(t, rows, product, slow(product)); },
                          [&] { RunProduct(t, rows, product, fast(product)); })});
    }
    return speed_ups;
  }

  // Each product's time through oneDNN's float32 kernel over its time through its bf16 one.
  std::vector<ProductSpeedUp> MeasureKernels(int rows) const {
    return SpeedUps(
        rows, [](int) { return std::optional(math::Precision::kFp32); },
        [](int) { return std::optional(math::Precision::kBf16); });
  }

  // Each product's time through im2col over its time through oneDNN with inputs in `kernels`;
  // nullopt when oneDNN has no kernel for the shape.
  std::optional<std::vector<ProductSpeedUp>> Measure(
      int rows, const std::array<math::Precision, 3>& kernels) const {
    for (const math::Precision p : kernels) {
      if (!dnnl_.Available(rows, p)) return std::nullopt;
    }
    return SpeedUps(
        rows, [](int) -> std::optional<math::Precision> { return std::nullopt; },
        [&](int product) { return std::optional(kernels[static_cast<std::size_t>(product)]); });
  }

  // out = in (*) W over `rows` samples, without bias.
  void Im2colForward(const float* params, const float* in, float* out, int rows,
                     float* scratch) const {
    const int f = output().channels;
    ForEachChunk(rows, [&](int first, int count) {
      Im2col(in, first, count, scratch);
      math::Gemm(Trans::kNo, Trans::kNo, count * positions_, f, patch_, 1.0f, scratch, patch_,
                 params, f, 0.0f, out + OutOffset(first), f);
    });
  }

  // dW (overwritten) from the gradient before the activation, dout.
  void Im2colWeightGradient(const float* in, const float* dout, float* dweights, int rows,
                            float* scratch) const {
    const int f = output().channels;
    ForEachChunk(rows, [&](int first, int count) {
      Im2col(in, first, count, scratch);
      math::Gemm(Trans::kYes, Trans::kNo, patch_, f, count * positions_, 1.0f, scratch, patch_,
                 dout + OutOffset(first), f, first == 0 ? 0.0f : 1.0f, dweights, f);
    });
  }

  // din (overwritten) from the gradient before the activation, dout.
  void Im2colInputGradient(const float* params, const float* dout, float* din, int rows,
                           float* scratch) const {
    const int f = output().channels;
    ForEachChunk(rows, [&](int first, int count) {
      math::Gemm(Trans::kNo, Trans::kYes, count * positions_, patch_, f, 1.0f,
                 dout + OutOffset(first), f, params, f, 0.0f, scratch, patch_);
      Col2im(scratch, first, count, din);
    });
  }
  std::size_t ColumnFloatsPerSample() const {
    return static_cast<std::size_t>(positions_) * static_cast<std::size_t>(patch_);
  }
  int ChunkSamples() const {
    return static_cast<int>(std::max<std::size_t>(1, kColumnFloats / ColumnFloatsPerSample()));
  }
  std::size_t OutOffset(int sample) const {
    return static_cast<std::size_t>(sample) * output().Size();
  }

  template <typename F>
  void ForEachChunk(int rows, F&& body) const {
    const int chunk = ChunkSamples();
    for (int first = 0; first < rows; first += chunk) body(first, std::min(chunk, rows - first));
  }

  // Visits every kernel row of every patch row of samples [first, first + count):
  // visit(column offset of the kernel row, input offset of its first cell inside the input,
  // begin, end), where cells [begin, end) of the row lie inside the input (contiguous there,
  // C floats each) and the others outside; begin == end when none is inside.
  template <typename Visit>
  void ForEachKernelRow(int first, int count, Visit&& visit) const {
    const Shape in = input(), out = output();
    const int c = in.channels, k = g_.kernel;
    for (int s = 0; s < count; ++s) {
      const std::size_t in_base = static_cast<std::size_t>(first + s) * in.Size();
      const std::size_t col_base = static_cast<std::size_t>(s) * ColumnFloatsPerSample();
      for (int oh = 0; oh < out.height; ++oh) {
        for (int ow = 0; ow < out.width; ++ow) {
          const std::size_t row = col_base + static_cast<std::size_t>(oh * out.width + ow) * patch_;
          const int iw0 = ow * g_.stride - g_.pad_left;
          const int begin = std::max(0, -iw0), end = std::max(begin, std::min(k, in.width - iw0));
          for (int kh = 0; kh < k; ++kh) {
            const std::size_t col = row + static_cast<std::size_t>(kh * k * c);
            const int ih = oh * g_.stride - g_.pad_top + kh;
            if (ih < 0 || ih >= in.height) {
              visit(col, std::size_t{0}, 0, 0);
              continue;
            }
            visit(col, in_base + static_cast<std::size_t>((ih * in.width + iw0 + begin) * c), begin,
                  end);
          }
        }
      }
    }
  }

  // Writes every float of the chunk's columns once: the input where a cell is inside, else 0.
  void Im2col(const float* in, int first, int count, float* col) const {
    const auto c = static_cast<std::size_t>(input().channels);
    const auto k = static_cast<std::size_t>(g_.kernel);
    ForEachKernelRow(first, count, [&](std::size_t to, std::size_t from, int begin, int end) {
      float* row = col + to;
      const std::size_t b = static_cast<std::size_t>(begin) * c,
                        e = static_cast<std::size_t>(end) * c;
      // One select loop, not fill-copy-fill: a first layer's rows are a few floats (k x 1
      // channel), where three library calls per row cost more than the copying.
      for (std::size_t i = 0; i < k * c; ++i) row[i] = i >= b && i < e ? in[from + i - b] : 0.0f;
    });
  }

  void Col2im(const float* col, int first, int count, float* din) const {
    const auto c = static_cast<std::size_t>(input().channels);
    float* begin_din = din + static_cast<std::size_t>(first) * input().Size();
    std::fill(begin_din, begin_din + static_cast<std::size_t>(count) * input().Size(), 0.0f);
    ForEachKernelRow(first, count, [&](std::size_t from, std::size_t to, int begin, int end) {
      const float* row = col + from + static_cast<std::size_t>(begin) * c;
      const std::size_t floats = static_cast<std::size_t>(end - begin) * c;
      for (std::size_t i = 0; i < floats; ++i) din[to + i] += row[i];
    });
  }

  Geometry g_;
  int patch_;      // k * k * C: a column row's length
  int positions_;  // OH * OW
  math::Activation activation_;
  math::DnnlConv dnnl_;
  // Each precision's products are timed apart: [0] fp32, [1] bf16 ("... in bf16").
  std::string shape_names_[2] = {ShapeName(), ShapeName() + " in bf16"};
};

// Output side and leading padding of one dimension, or an error.
Result<std::pair<int, int>> Side(int size, const LayerSpec& spec, std::string_view dimension) {
  const int k = spec.kernel, s = spec.stride;
  if (spec.padding == kSamePadding) {
    const int out = (size + s - 1) / s;
    const int total = std::max((out - 1) * s + k - size, 0);
    return std::pair{out, total / 2};
  }
  if (size + 2 * spec.padding < k) {
    return Status::Error("kernel " + std::to_string(k) + " is larger than the input's " +
                         std::string(dimension) + " " + std::to_string(size) + " padded by " +
                         std::to_string(spec.padding) + " on each side");
  }
  return std::pair{(size + 2 * spec.padding - k) / s + 1, spec.padding};
}

Result<std::unique_ptr<Layer>> MakeConv2d(const LayerSpec& spec, Shape input, int /*outputs*/) {
  if (spec.filters < 1 || spec.filters > kMaxFilters) {
    return Status::Error("conv2d filters must be in [1, " + std::to_string(kMaxFilters) + "]");
  }
  if (spec.kernel < 1 || spec.kernel > kMaxKernel) {
    return Status::Error("conv2d kernel must be in [1, " + std::to_string(kMaxKernel) + "]");
  }
  if (spec.stride < 1 || spec.stride > kMaxKernel) {
    return Status::Error("conv2d stride must be in [1, " + std::to_string(kMaxKernel) + "]");
  }
  if (spec.padding < kSamePadding || spec.padding >= spec.kernel) {
    return Status::Error("conv2d padding must be \"same\", \"valid\" or a number in [0, kernel)");
  }
  const std::size_t patch = static_cast<std::size_t>(spec.kernel) * spec.kernel * input.channels;
  if (patch > kMaxPatch) {
    return Status::Error("conv2d kernel " + std::to_string(spec.kernel) + " over " +
                         std::to_string(input.channels) + " channels makes patches of " +
                         std::to_string(patch) + " values, more than " + std::to_string(kMaxPatch));
  }
  Result<std::pair<int, int>> rows = Side(input.height, spec, "height");
  if (!rows.ok()) return rows.status();
  Result<std::pair<int, int>> cols = Side(input.width, spec, "width");
  if (!cols.ok()) return cols.status();
  const std::size_t values = static_cast<std::size_t>(spec.filters) *
                             static_cast<std::size_t>(rows.value().first) *
                             static_cast<std::size_t>(cols.value().first);
  if (values > kMaxOutput) {
    return Status::Error("conv2d gives " + std::to_string(values) +
                         " values per sample, more than " + std::to_string(kMaxOutput));
  }
  const Shape output{spec.filters, rows.value().first, cols.value().first};
  const Geometry g{spec.kernel, spec.stride, rows.value().second, cols.value().second};
  return std::unique_ptr<Layer>(std::make_unique<Conv2d>(input, output, g, spec.activation));
}

std::string Summary(const LayerSpec& layer, int /*outputs*/) {
  const std::string k = std::to_string(layer.kernel);
  std::string out = "conv2d " + std::to_string(layer.filters) + "x" + k + "x" + k;
  if (layer.stride > 1) out += " stride " + std::to_string(layer.stride);
  if (layer.padding == kSamePadding) out += " same";
  return out + SummaryActivation(layer.activation);
}

constexpr LayerSpelling kNames[] = {{"conv2d", {.kind = LayerKind::kConv2d, .stride = 1}}};
constexpr LayerKey kKeys[] = {IntKey("filters", &LayerSpec::filters, 1, kMaxFilters)
                                  .Required("conv2d needs filters (output channels), such as 32"),
                              IntKey("kernel", &LayerSpec::kernel, 1, kMaxKernel)
                                  .Required("conv2d needs a kernel side, such as 5"),
                              IntKey("stride", &LayerSpec::stride, 1, kMaxKernel),
                              PaddingKey("padding", &LayerSpec::padding, kMaxKernel),
                              ActivationKey("activation")};

}  // namespace conv2d_layer

extern constexpr LayerType kConv2dLayer{.kind = LayerKind::kConv2d,
                                        .spellings = conv2d_layer::kNames,
                                        .keys = conv2d_layer::kKeys,
                                        .make = conv2d_layer::MakeConv2d,
                                        .write_graph = WriteGraphOf<conv2d_layer::Conv2d>,
                                        .summary = conv2d_layer::Summary};

}  // namespace dtrain::model::layers
