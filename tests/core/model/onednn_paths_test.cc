// The two paths of conv2d and the pools (onednn_paths.h): oneDNN against im2col + GEMM, and
// against the pools' own loops, on random shapes (strides, paddings same, valid and numbers, odd
// sizes, batches of 1 and odd sizes) — the forward, the input gradient and the weight gradient
// within 1e-5 of the largest value, never bit for bit, as the two sum in different orders — and
// what the choice reports. ctest runs this suite again with DNNL_MAX_CPU_ISA=AVX2, so oneDNN's
// kernels for CPUs without AVX-512 are checked too.
#include "core/model/onednn_paths.h"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/native_bf16.h"
#include "core/math/dnnl_conv.h"
#include "core/math/dnnl_pool.h"
#include "core/model/layer.h"
#include "core/model/model.h"

namespace dtrain::model {
namespace onednn_paths_test {

// Sets the mode for a test, and auto however the test ends.
struct ForcedPath {
  explicit ForcedPath(PathMode mode) { SetPathMode(mode); }
  ~ForcedPath() { SetPathMode(PathMode::kAuto); }
};

struct Results {
  std::vector<float> out, din, dparams;
};

// One forward and backward pass of `layer` on `rows` rows, through the path `mode` forces.
Results Pass(const Layer& layer, PathMode mode, const std::vector<float>& params,
             const std::vector<float>& in, const std::vector<float>& upstream, int rows) {
  const ForcedPath forced(mode);
  std::vector<float> scratch(layer.ScratchFloats(rows));
  const LayerPass pass{.rows = rows, .training = true, .scratch = scratch.data()};
  Results r{std::vector<float>(upstream.size()), std::vector<float>(in.size(), -7.0f),
            std::vector<float>(params.size(), -7.0f)};
  layer.Forward(params.data(), in.data(), r.out.data(), pass);
  std::vector<float> dout = upstream;
  layer.Backward(params.data(), in.data(), r.out.data(), dout.data(), r.din.data(),
                 r.dparams.data(), pass);
  return r;
}

void CheckClose(const std::vector<float>& onednn, const std::vector<float>& im2col,
                const char* what) {
  BOOST_TEST_REQUIRE(onednn.size() == im2col.size());
  float largest = 0.0f;
  for (float v : im2col) largest = std::max(largest, std::fabs(v));
  for (std::size_t i = 0; i < onednn.size(); ++i) {
    BOOST_TEST(std::fabs(onednn[i] - im2col[i]) <= 1e-5f * largest,
               what << "[" << i << "]: oneDNN " << onednn[i] << " vs im2col " << im2col[i]);
  }
}

// The layer's pass through oneDNN against its pass through its own path.
void CheckPathsAgree(const Layer& layer, const std::vector<float>& params,
                     const std::vector<float>& in, const std::vector<float>& upstream, int rows) {
  const Results a = Pass(layer, PathMode::kOnednn, params, in, upstream, rows);
  const Results b = Pass(layer, PathMode::kOwn, params, in, upstream, rows);
  CheckClose(a.out, b.out, "out");
  CheckClose(a.din, b.din, "din");
  CheckClose(a.dparams, b.dparams, "dparams");
}

std::unique_ptr<Layer> Made(const LayerSpec& spec, Shape input) {
  Result<std::unique_ptr<Layer>> made = MakeLayer(spec, input, 1);
  BOOST_TEST_REQUIRE(made.ok(), made.status().message());
  return std::move(made).value();
}

// Leading padding of one side, as conv2d pads: "same" splits the total, the smaller part first.
int PadBefore(int size, int out, const LayerSpec& spec) {
  if (spec.padding != kSamePadding) return spec.padding;
  return std::max((out - 1) * spec.stride + spec.kernel - size, 0) / 2;
}

math::ConvGeometry GeometryOf(const Layer& layer, const LayerSpec& spec) {
  const Shape in = layer.input(), out = layer.output();
  return {.channels = in.channels,
          .height = in.height,
          .width = in.width,
          .filters = out.channels,
          .out_height = out.height,
          .out_width = out.width,
          .kernel = spec.kernel,
          .stride = spec.stride,
          .pad_top = PadBefore(in.height, out.height, spec),
          .pad_left = PadBefore(in.width, out.width, spec)};
}

ModelSpec SmallCnn() {
  ModelSpec spec;
  spec.type = ModelType::kSequential;
  spec.inputs = 2 * 8 * 8;
  spec.outputs = 3;
  spec.input_shape = {2, 8, 8};
  spec.layers = {{.kind = LayerKind::kConv2d,
                  .filters = 4,
                  .kernel = 3,
                  .stride = 1,
                  .padding = kSamePadding,
                  .activation = math::Activation::kRelu},
                 {.kind = LayerKind::kMaxPool2d, .kernel = 2, .stride = 2},
                 {.kind = LayerKind::kFlatten},
                 {.kind = LayerKind::kDense, .units = 3}};
  return spec;
}

BOOST_AUTO_TEST_SUITE(onednn_paths)

BOOST_AUTO_TEST_CASE(conv2d_through_onednn_gives_im2cols_values_on_random_shapes) {
  std::mt19937 rng(45);
  const auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution(lo, hi)(rng); };
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int batches[] = {1, 3, 7, 13};
  for (int trial = 0; trial < 24; ++trial) {
    const int kernel = uniform(1, 5), stride = uniform(1, 3);
    const int paddings[] = {kSamePadding, 0, kernel - 1, kernel / 2};
    const LayerSpec spec{
        .kind = LayerKind::kConv2d,
        .filters = uniform(1, 19),
        .kernel = kernel,
        .stride = stride,
        .padding = paddings[uniform(0, 3)],
        .activation = trial % 2 == 0 ? math::Activation::kRelu : math::Activation::kIdentity};
    const Shape input{uniform(1, 9), uniform(kernel, 13), uniform(kernel, 13)};
    const int rows = batches[trial % 4];
    const std::unique_ptr<Layer> made = Made(spec, input);
    const Layer& layer = *made;
    BOOST_TEST_CONTEXT(FormatLayerSpec(spec)
                       << " on " << FormatShape(input) << ", " << rows << " rows") {
      BOOST_TEST_REQUIRE(
          math::DnnlConv(GeometryOf(layer, spec)).Available(rows, math::Precision::kFp32));
      std::vector<float> params(layer.NumParams()),
          in(static_cast<std::size_t>(rows) * input.Size()),
          upstream(static_cast<std::size_t>(rows) * layer.output().Size());
      for (auto* v : {&params, &in, &upstream}) {
        for (float& x : *v) x = normal(rng);
      }
      CheckPathsAgree(layer, params, in, upstream, rows);
    }
  }
}

// train.precision = "bf16" (math/precision.h): each path's values against float32's within the
// bound of bf16 inputs summed in float — for every value, (2u + u^2 + K 2^-22) times the same
// sums over the inputs' magnitudes, plus 2^-22 of the value, with u = 2^-8 bf16's unit roundoff
// and K the longest sum (see tests/core/math/bf16_products_test.cc). The magnitudes are the
// float pass over |params|, |in| and |upstream|; the activation is the identity, as a relu's
// derivative would flip with the sign of an output near zero. Timed (auto), a product may run on
// oneDNN's float32 kernel instead: within the bound too.
BOOST_AUTO_TEST_CASE(conv2d_in_bf16_stays_within_the_bf16_bound_on_both_paths,
                     *boost::unit_test::precondition(testing::NativeBf16Here)) {
  std::mt19937 rng(47);
  const auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution(lo, hi)(rng); };
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto magnitudes = [](std::vector<float> v) {
    for (float& x : v) x = std::fabs(x);
    return v;
  };
  for (int trial = 0; trial < 12; ++trial) {
    const int kernel = uniform(1, 5), stride = uniform(1, 2);
    const LayerSpec spec{.kind = LayerKind::kConv2d,
                         .filters = uniform(1, 19),
                         .kernel = kernel,
                         .stride = stride,
                         .padding = trial % 2 == 0 ? kSamePadding : 0,
                         .activation = math::Activation::kIdentity};
    const Shape input{uniform(1, 9), uniform(kernel, 13), uniform(kernel, 13)};
    const int rows = 1 + 4 * (trial % 4);
    const std::unique_ptr<Layer> made = Made(spec, input);
    const Layer& layer = *made;
    std::vector<float> params(layer.NumParams()), in(static_cast<std::size_t>(rows) * input.Size()),
        upstream(static_cast<std::size_t>(rows) * layer.output().Size());
    for (auto* v : {&params, &in, &upstream}) {
      for (float& x : *v) x = normal(rng);
    }
    const Results exact = Pass(layer, PathMode::kOwn, params, in, upstream, rows);
    const Results size =
        Pass(layer, PathMode::kOwn, magnitudes(params), magnitudes(in), magnitudes(upstream), rows);
    const Shape out = layer.output();
    const double longest_sum =
        std::max({kernel * kernel * input.channels, kernel * kernel * out.channels,
                  rows * out.height * out.width});
    constexpr double u = 0x1.0p-8;
    const double relative = 2 * u + u * u + longest_sum * 0x1.0p-22;
    for (const PathMode mode : {PathMode::kOwn, PathMode::kOnednn, PathMode::kAuto}) {
      const testing::ScopedPrecision bf16(math::Precision::kBf16);
      const Results r = Pass(layer, mode, params, in, upstream, rows);
      BOOST_TEST_CONTEXT(FormatLayerSpec(spec)
                         << " on " << FormatShape(input) << ", " << rows << " rows, "
                         << (mode == PathMode::kOwn ? "im2col" : "oneDNN")) {
        struct Part {
          const char* name;
          const std::vector<float>&got, &want, &scale;
        };
        for (const Part& p :
             {Part{"out", r.out, exact.out, size.out}, Part{"din", r.din, exact.din, size.din},
              Part{"dparams", r.dparams, exact.dparams, size.dparams}}) {
          for (std::size_t i = 0; i < p.want.size(); ++i) {
            const double bound = relative * p.scale[i] + 0x1.0p-22 * std::fabs(p.want[i]);
            BOOST_TEST(std::fabs(p.got[i] - p.want[i]) <= bound,
                       p.name << "[" << i << "]: bf16 " << p.got[i] << " vs fp32 " << p.want[i]);
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(pools_through_onednn_give_their_own_values_on_random_shapes) {
  std::mt19937 rng(46);
  const auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution(lo, hi)(rng); };
  const int batches[] = {1, 3, 7, 13};
  for (int trial = 0; trial < 24; ++trial) {
    const int kernel = uniform(1, 4);
    const LayerSpec spec{.kind = trial % 2 == 0 ? LayerKind::kMaxPool2d : LayerKind::kAvgPool2d,
                         .kernel = kernel,
                         .stride = uniform(1, 4)};
    const Shape input{uniform(1, 40), uniform(kernel, 15), uniform(kernel, 15)};
    const int rows = batches[trial % 4];
    const std::unique_ptr<Layer> made = Made(spec, input);
    const Layer& layer = *made;
    BOOST_TEST_CONTEXT(FormatLayerSpec(spec)
                       << " on " << FormatShape(input) << ", " << rows << " rows") {
      BOOST_TEST_REQUIRE(math::DnnlPool({.channels = input.channels,
                                         .height = input.height,
                                         .width = input.width,
                                         .out_height = layer.output().height,
                                         .out_width = layer.output().width,
                                         .kernel = kernel,
                                         .stride = spec.stride,
                                         .max = spec.kind == LayerKind::kMaxPool2d})
                             .Available(rows));
      // Few distinct values, as after a relu: windows whose maximum is there more than once.
      std::vector<float> in(static_cast<std::size_t>(rows) * input.Size()),
          upstream(static_cast<std::size_t>(rows) * layer.output().Size());
      for (float& x : in) x = static_cast<float>(std::max(0, uniform(-3, 3)));
      for (float& x : upstream) x = static_cast<float>(uniform(-50, 50)) / 8.0f;
      CheckPathsAgree(layer, {}, in, upstream, rows);
    }
  }
}

// The line of `shape` among `lines` names each of `products` as run by `own` or `other`.
void CheckNamesEachProduct(const std::vector<std::string>& lines, const std::string& shape,
                           const std::string& own, const std::string& other,
                           std::initializer_list<const char*> products) {
  const auto line = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) {
    return l.rfind(shape + ": ", 0) == 0;
  });
  BOOST_TEST_REQUIRE((line != lines.end()), shape);
  for (const char* product : products) {
    const std::string named = std::string(" ") + product + " (";
    BOOST_TEST((line->find(other + named) != std::string::npos ||
                line->find(own + named) != std::string::npos),
               *line << " names " << product);
  }
}

BOOST_AUTO_TEST_CASE(the_choice_names_each_product_of_each_shape_once) {
  const ForcedPath automatic(PathMode::kAuto);  // whatever DTRAIN_CONV says
  const Model cnn(SmallCnn());
  const std::vector<std::string> lines = ChooseLayerPaths(cnn, 5);
  CheckNamesEachProduct(lines, "conv2d 4x3x3 over 2x8x8 to 4x8x8", "im2col", "oneDNN",
                        {"forward", "input gradient", "weight gradient"});
  CheckNamesEachProduct(lines, "maxpool 2 over 4x8x8", "dtrain's loops", "oneDNN",
                        {"forward", "gradient"});
  // Made once: a second model of the same shapes, at another batch size, measures nothing new.
  BOOST_TEST(ChooseLayerPaths(Model(SmallCnn()), 9) == lines, boost::test_tools::per_element());
}

// In bf16 a convolution's shape is timed apart, and first which of oneDNN's kernels, bf16 or
// float32, runs each product; pooling keeps its one (float) choice.
BOOST_AUTO_TEST_CASE(in_bf16_a_convolution_also_names_the_kernel_of_each_product,
                     *boost::unit_test::precondition(testing::NativeBf16Here)) {
  const ForcedPath automatic(PathMode::kAuto);
  const testing::ScopedPrecision bf16(math::Precision::kBf16);
  const std::vector<std::string> lines = ChooseLayerPaths(Model(SmallCnn()), 5);
  const std::initializer_list<const char*> products = {"forward", "input gradient",
                                                       "weight gradient"};
  CheckNamesEachProduct(lines, "conv2d 4x3x3 over 2x8x8 to 4x8x8 in bf16, oneDNN's kernels",
                        "float32", "bf16", products);
  CheckNamesEachProduct(lines, "conv2d 4x3x3 over 2x8x8 to 4x8x8 in bf16", "im2col", "oneDNN",
                        products);
  BOOST_TEST(std::none_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.rfind("maxpool", 0) == 0 && l.find("bf16") != std::string::npos;
  }));
}

BOOST_AUTO_TEST_CASE(a_forced_path_is_named_and_a_model_without_convolutions_says_nothing) {
  {
    const ForcedPath forced(PathMode::kOwn);
    BOOST_TEST(ChooseLayerPaths(Model(SmallCnn()), 4) ==
                   std::vector<std::string>{"convolutions and pooling: their own paths, im2col + "
                                            "GEMM (DTRAIN_CONV=im2col)"},
               boost::test_tools::per_element());
  }
  ModelSpec mlp;
  mlp.type = ModelType::kMlp;
  mlp.inputs = 4;
  mlp.hidden = {3};
  mlp.outputs = 2;
  BOOST_TEST(ChooseLayerPaths(Model(mlp), 4).empty());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace onednn_paths_test
}  // namespace dtrain::model
