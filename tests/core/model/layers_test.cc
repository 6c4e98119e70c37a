// Every layer type checked on its own: its backward against central finite differences of its
// forward (strides, paddings, odd sizes, several channels), conv2d against a direct convolution,
// pooling and dropout against their definitions; and whole layer-list models.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <numeric>
#include <random>
#include <tuple>
#include <vector>

#include "common/central_differences.h"
#include "core/math/buffer.h"
#include "core/model/layer.h"
#include "core/model/model.h"
#include "core/model/onednn_paths.h"

namespace dtrain::model {
namespace layers_test {

constexpr int kRows = 2;

struct Setup {
  std::unique_ptr<Layer> layer;
  std::vector<float> params, in, upstream;  // upstream: the weights r of L = sum r * out
  std::vector<float> scratch, state;
};

Setup Make(const LayerSpec& spec, Shape input, unsigned seed) {
  Result<std::unique_ptr<Layer>> made = MakeLayer(spec, input, 3);
  BOOST_TEST_REQUIRE(made.ok(), made.status().message());
  Setup s{std::move(made).value(), {}, {}, {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  s.params.resize(s.layer->NumParams());
  for (float& p : s.params) p = 0.5f * normal(rng);
  s.in.resize(kRows * input.Size());
  for (float& v : s.in) v = normal(rng);
  s.upstream.resize(kRows * s.layer->output().Size());
  for (float& v : s.upstream) v = normal(rng);
  s.scratch.resize(s.layer->ScratchFloats(kRows));
  s.state.resize(s.layer->StateFloats());
  return s;
}

LayerPass Pass(Setup& s, bool training = false) {
  return {.rows = kRows,
          .training = training,
          .noise_seed = 99,
          .scratch = s.scratch.data(),
          .state = s.state.data()};
}

std::vector<float> Forward(Setup& s, const std::vector<float>& params, const std::vector<float>& in,
                           bool training = false) {
  std::vector<float> out(kRows * s.layer->output().Size());
  s.layer->Forward(params.data(), in.data(), out.data(), Pass(s, training));
  return out;
}

double Objective(Setup& s, const std::vector<float>& params, const std::vector<float>& in,
                 bool training) {
  const std::vector<float> out = Forward(s, params, in, training);
  double sum = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) sum += static_cast<double>(out[i]) * s.upstream[i];
  return sum;
}

// Compares Backward's dL/d(in) and dL/d(params) with central differences of step eps.
void CheckLayerGradient(Setup& s, float eps, bool training = false) {
  const std::vector<float> out = Forward(s, s.params, s.in, training);
  std::vector<float> dout = s.upstream;
  std::vector<float> din(s.in.size(), -7.0f), dparams(s.params.size(), -7.0f);
  s.layer->Backward(s.params.data(), s.in.data(), out.data(), dout.data(), din.data(),
                    dparams.data(), Pass(s, training));
  const auto objective = [&] { return Objective(s, s.params, s.in, training); };
  testing::CheckCentralDifferences(s.in, din, objective,
                                   {.step = eps, .abs = 2e-3, .rel = 2e-3, .what = "din"});
  testing::CheckCentralDifferences(s.params, dparams, objective,
                                   {.step = eps, .abs = 2e-3, .rel = 2e-3, .what = "dparams"});
}

LayerSpec Conv(int filters, int kernel, int stride, int padding,
               math::Activation act = math::Activation::kIdentity) {
  return {.kind = LayerKind::kConv2d,
          .filters = filters,
          .kernel = kernel,
          .stride = stride,
          .padding = padding,
          .activation = act};
}

// out(h, w, f) = b_f + sum over the kernel and channels of W * in, zeros outside the input.
std::vector<float> DirectConvolution(const Setup& s, const LayerSpec& spec, int pad_top,
                                     int pad_left) {
  const Shape in = s.layer->input(), out = s.layer->output();
  const int k = spec.kernel, c = in.channels, f = out.channels;
  const float* bias = s.params.data() + static_cast<std::size_t>(k * k * c * f);
  std::vector<float> result;
  for (int r = 0; r < kRows; ++r) {
    for (int oh = 0; oh < out.height; ++oh) {
      for (int ow = 0; ow < out.width; ++ow) {
        for (int filter = 0; filter < f; ++filter) {
          double sum = bias[filter];
          for (int kh = 0; kh < k; ++kh) {
            for (int kw = 0; kw < k; ++kw) {
              const int ih = oh * spec.stride - pad_top + kh, iw = ow * spec.stride - pad_left + kw;
              if (ih < 0 || ih >= in.height || iw < 0 || iw >= in.width) continue;
              for (int ch = 0; ch < c; ++ch) {
                const float x = s.in[static_cast<std::size_t>(r) * in.Size() +
                                     static_cast<std::size_t>((ih * in.width + iw) * c + ch)];
                const float w =
                    s.params[static_cast<std::size_t>(((kh * k + kw) * c + ch) * f + filter)];
                sum += static_cast<double>(x) * w;
              }
            }
          }
          result.push_back(static_cast<float>(sum));
        }
      }
    }
  }
  return result;
}

struct ConvCase {
  Shape input;
  LayerSpec spec;
  Shape expected_output;
  int pad_top, pad_left;
};

const ConvCase kConvCases[] = {
    {{1, 5, 5}, Conv(2, 3, 1, kSamePadding), {2, 5, 5}, 1, 1},
    {{3, 7, 5}, Conv(4, 3, 2, 0), {4, 3, 2}, 0, 0},
    {{2, 6, 7}, Conv(3, 2, 2, kSamePadding), {3, 3, 4}, 0, 0},  // even kernel: padding after
    {{3, 7, 5}, Conv(4, 3, 2, 1), {4, 4, 3}, 1, 1},
    {{2, 4, 4}, Conv(3, 5, 1, 2), {3, 4, 4}, 2, 2},
    {{1, 5, 6}, Conv(2, 4, 3, kSamePadding), {2, 2, 2}, 1, 0},
};

// conv2d on each of kConvCases against DirectConvolution, and its gradient by central differences.
void CheckConvCases() {
  unsigned seed = 1;
  for (const ConvCase& c : kConvCases) {
    BOOST_TEST_CONTEXT(FormatLayerSpec(c.spec) << " on " << FormatShape(c.input)) {
      Setup s = Make(c.spec, c.input, seed++);
      BOOST_TEST((s.layer->output() == c.expected_output), FormatShape(s.layer->output()));
      BOOST_TEST(s.layer->NumParams() ==
                 static_cast<std::size_t>(c.spec.kernel * c.spec.kernel * c.input.channels + 1) *
                     c.spec.filters);
      const std::vector<float> direct = DirectConvolution(s, c.spec, c.pad_top, c.pad_left);
      const std::vector<float> lowered = Forward(s, s.params, s.in);
      BOOST_TEST_REQUIRE(direct.size() == lowered.size());
      for (std::size_t i = 0; i < direct.size(); ++i) {
        BOOST_TEST(lowered[i] == direct[i], boost::test_tools::tolerance(1e-4f));
      }
      CheckLayerGradient(s, 1e-2f);
    }
  }
}

// maxpool2d and avgpool2d against their definitions, and their gradients by central differences.
void CheckPoolCases() {
  for (LayerKind kind : {LayerKind::kMaxPool2d, LayerKind::kAvgPool2d}) {
    // (2, 0) on a 6x6 input tiles it exactly (each cell in one window); the others leave cells
    // out or overlap.
    for (auto [kernel, stride, height] :
         {std::tuple{2, 0, 7}, std::tuple{2, 0, 6}, std::tuple{3, 1, 7}, std::tuple{2, 3, 7}}) {
      const LayerSpec spec{.kind = kind, .kernel = kernel, .stride = stride};
      const Shape input{2, height, 6};
      BOOST_TEST_CONTEXT(FormatLayerSpec(spec) << " on " << height << "x6") {
        Setup s = Make(spec, input, 11);
        // Distinct values 0.05 apart: no step of the differences below changes a window's max.
        std::iota(s.in.begin(), s.in.end(), 0.0f);
        std::shuffle(s.in.begin(), s.in.end(), std::mt19937(3));
        for (float& v : s.in) v *= 0.05f;
        const int st = stride > 0 ? stride : kernel;
        const Shape out = s.layer->output();
        BOOST_TEST((out == Shape{2, (height - kernel) / st + 1, (6 - kernel) / st + 1}));
        const std::vector<float> got = Forward(s, s.params, s.in);
        for (int r = 0; r < kRows; ++r) {
          for (int oh = 0; oh < out.height; ++oh) {
            for (int ow = 0; ow < out.width; ++ow) {
              for (int c = 0; c < 2; ++c) {
                float best = -1e30f, sum = 0.0f;
                for (int kh = 0; kh < kernel; ++kh) {
                  for (int kw = 0; kw < kernel; ++kw) {
                    const float v =
                        s.in[static_cast<std::size_t>(r) * input.Size() +
                             static_cast<std::size_t>(((oh * st + kh) * 6 + ow * st + kw) * 2 + c)];
                    best = std::max(best, v);
                    sum += v;
                  }
                }
                const float want = kind == LayerKind::kMaxPool2d
                                       ? best
                                       : sum / static_cast<float>(kernel * kernel);
                const float have = got[static_cast<std::size_t>(r) * out.Size() +
                                       static_cast<std::size_t>((oh * out.width + ow) * 2 + c)];
                BOOST_TEST(have == want, boost::test_tools::tolerance(1e-5f));
              }
            }
          }
        }
        CheckLayerGradient(s, 1e-2f);
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE(layers)

BOOST_AUTO_TEST_CASE(conv2d_matches_a_direct_convolution_and_its_gradient_checks) {
  CheckConvCases();
}

// The same checks through each path of conv2d and the pools, forced (onednn_paths.h).
BOOST_AUTO_TEST_CASE(conv2d_and_pools_check_through_their_own_paths_and_through_onednn) {
  for (const PathMode mode : {PathMode::kOwn, PathMode::kOnednn}) {
    BOOST_TEST_CONTEXT((mode == PathMode::kOwn ? "their own paths" : "oneDNN")) {
      SetPathMode(mode);
      CheckConvCases();
      CheckPoolCases();
    }
  }
  SetPathMode(PathMode::kAuto);
}

BOOST_AUTO_TEST_CASE(conv2d_with_relu_equals_conv2d_then_a_relu_layer) {
  const Shape input{3, 6, 6};
  Setup fused = Make(Conv(4, 3, 1, kSamePadding, math::Activation::kRelu), input, 5);
  Setup plain = Make(Conv(4, 3, 1, kSamePadding), input, 5);
  Setup relu = Make({.kind = LayerKind::kActivation, .activation = math::Activation::kRelu},
                    plain.layer->output(), 6);
  const std::vector<float> z = Forward(plain, plain.params, plain.in);
  const std::vector<float> a = Forward(relu, {}, z);
  BOOST_TEST(Forward(fused, fused.params, fused.in) == a, boost::test_tools::per_element());

  std::vector<float> dout_fused = fused.upstream, dout_relu = fused.upstream;
  std::vector<float> din_fused(fused.in.size()), dparams_fused(fused.params.size());
  fused.layer->Backward(fused.params.data(), fused.in.data(), a.data(), dout_fused.data(),
                        din_fused.data(), dparams_fused.data(), Pass(fused));
  std::vector<float> dz(z.size()), din(plain.in.size()), dparams(plain.params.size());
  relu.layer->Backward(nullptr, z.data(), a.data(), dout_relu.data(), dz.data(), nullptr,
                       Pass(relu));
  plain.layer->Backward(plain.params.data(), plain.in.data(), z.data(), dz.data(), din.data(),
                        dparams.data(), Pass(plain));
  BOOST_TEST(din_fused == din, boost::test_tools::per_element());
  BOOST_TEST(dparams_fused == dparams, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(pools_compute_their_windows_and_their_gradients_check) { CheckPoolCases(); }

BOOST_AUTO_TEST_CASE(activations_flatten_and_dense_gradients_check) {
  const Shape spatial{3, 4, 5};
  for (math::Activation act :
       {math::Activation::kRelu, math::Activation::kTanh, math::Activation::kSigmoid}) {
    Setup s = Make({.kind = LayerKind::kActivation, .activation = act}, spatial, 21);
    for (float& v : s.in) v = std::copysign(0.1f + std::fabs(v), v);  // away from relu's kink
    CheckLayerGradient(s, 1e-3f);
  }
  Setup flatten = Make({.kind = LayerKind::kFlatten}, spatial, 22);
  BOOST_TEST((flatten.layer->output() == Shape{60, 1, 1}));
  BOOST_TEST(Forward(flatten, {}, flatten.in) == flatten.in, boost::test_tools::per_element());
  CheckLayerGradient(flatten, 1e-2f);
  // A dense layer reads a spatial input flat; units 0 stands for the model's outputs (3 here).
  Setup dense =
      Make({.kind = LayerKind::kDense, .activation = math::Activation::kTanh}, spatial, 23);
  BOOST_TEST((dense.layer->output() == Shape{3, 1, 1}));
  CheckLayerGradient(dense, 1e-3f);
}

BOOST_AUTO_TEST_CASE(dropout_drops_its_rate_scales_the_rest_and_is_seeded) {
  const Shape shape{4, 25, 25};
  Setup s = Make({.kind = LayerKind::kDropout, .rate = 0.3f}, shape, 31);
  BOOST_TEST(Forward(s, {}, s.in, /*training=*/false) == s.in, boost::test_tools::per_element());
  const std::vector<float> a = Forward(s, {}, s.in, true);
  BOOST_TEST(Forward(s, {}, s.in, true) == a, boost::test_tools::per_element());
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == 0.0f) {
      ++dropped;
    } else {
      BOOST_TEST(a[i] == s.in[i] / 0.7f, boost::test_tools::tolerance(1e-6f));
    }
  }
  const double fraction = static_cast<double>(dropped) / static_cast<double>(a.size());
  BOOST_TEST(std::fabs(fraction - 0.3) < 0.02, "dropped " << fraction);
  LayerPass other = Pass(s, true);
  other.noise_seed = 100;
  std::vector<float> b(a.size());
  s.layer->Forward(nullptr, s.in.data(), b.data(), other);
  BOOST_TEST((a != b));
  CheckLayerGradient(s, 1e-2f, /*training=*/true);
}

BOOST_AUTO_TEST_CASE(batchnorm_gradient_checks_on_images_and_on_flat_rows) {
  for (Shape shape : {Shape{3, 4, 5}, Shape{7, 1, 1}}) {
    BOOST_TEST_CONTEXT(FormatShape(shape)) {
      Setup s = Make({.kind = LayerKind::kBatchNorm}, shape, 41);
      BOOST_TEST(s.layer->NumParams() == 4u * static_cast<std::size_t>(shape.channels));
      BOOST_TEST(s.layer->NumWeights() == 0u);  // nothing decays
      CheckLayerGradient(s, 1e-2f, /*training=*/true);
    }
  }
}

BOOST_AUTO_TEST_CASE(batchnorm_normalises_then_evaluates_with_running_statistics) {
  const Shape shape{2, 3, 3};
  Setup s = Make({.kind = LayerKind::kBatchNorm, .momentum = 1.0f}, shape, 43);
  for (std::size_t i = 0; i < 4; ++i) s.params[i] = i < 2 ? 1.0f : 0.0f;  // gamma 1, beta 0
  for (float& v : s.in) v = 3.0f * v + 5.0f;
  const std::vector<float> train = Forward(s, s.params, s.in, /*training=*/true);
  const std::size_t n = static_cast<std::size_t>(kRows) * 9;  // values per channel
  for (int c = 0; c < 2; ++c) {
    double sum = 0.0, squares = 0.0;
    for (std::size_t v = 0; v < n; ++v) sum += train[v * 2 + static_cast<std::size_t>(c)];
    for (std::size_t v = 0; v < n; ++v) {
      squares += std::pow(train[v * 2 + static_cast<std::size_t>(c)] - sum / n, 2);
    }
    BOOST_TEST(sum / n == 0.0, boost::test_tools::tolerance(1e-5));
    BOOST_TEST(squares / n == 1.0, boost::test_tools::tolerance(1e-3));
  }
  // With momentum 1 the running statistics become the batch's (variance unbiased), and
  // evaluation normalises by them.
  s.layer->UpdateStatistics(s.params.data(), s.state.data());
  const std::vector<float> eval = Forward(s, s.params, s.in, /*training=*/false);
  const float bessel = std::sqrt(static_cast<float>(n - 1) / static_cast<float>(n));
  for (std::size_t i = 0; i < eval.size(); ++i) {
    BOOST_TEST(eval[i] == train[i] * bessel, boost::test_tools::tolerance(1e-3f));
  }
  // A fresh layer's running statistics (mean 0, variance 1) leave values as they are.
  std::vector<float> fresh(s.layer->NumParams());
  for (std::size_t i = 0; i < fresh.size(); ++i) fresh[i] = s.layer->InitialParam(i);
  BOOST_TEST(Forward(s, fresh, s.in, false)[0] == s.in[0] / std::sqrt(1.0f + 1e-5f),
             boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(layers_that_do_not_fit_their_input_say_why) {
  auto error = [](const LayerSpec& spec, Shape input) {
    Result<std::unique_ptr<Layer>> made = MakeLayer(spec, input, 10);
    return made.ok() ? std::string("ok") : made.status().message();
  };
  BOOST_TEST(
      error(Conv(8, 5, 1, 0), {1, 3, 3}).find("kernel 5 is larger than the input's height 3") !=
      std::string::npos);
  BOOST_TEST(error(Conv(8, 3, 1, 3), {1, 9, 9}).find("padding") != std::string::npos);
  BOOST_TEST(error({.kind = LayerKind::kMaxPool2d, .kernel = 4}, {2, 3, 8}) ==
             "maxpool2d size 4 is larger than its 3x8 input");
  BOOST_TEST(error({.kind = LayerKind::kDropout, .rate = 1.0f}, {4, 1, 1}).find("[0, 1)") !=
             std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace layers_test
}  // namespace dtrain::model
