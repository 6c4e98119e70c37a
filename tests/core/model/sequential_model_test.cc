// Layer-list ("sequential") models: the spec's text form, its validation, a whole CNN's gradient
// against finite differences, and the shorthand types as the dense layers they stand for.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <random>

#include "common/central_differences.h"
#include "core/math/buffer.h"
#include "core/model/model.h"

namespace dtrain::model {
namespace sequential_model_test {

using math::Activation;

ModelSpec SmallCnn(Activation act) {
  ModelSpec spec;
  spec.type = ModelType::kSequential;
  spec.input_shape = {2, 8, 6};
  spec.inputs = 96;
  spec.outputs = 3;
  spec.loss = LossType::kSoftmaxCrossEntropy;
  spec.layers = {
      {.kind = LayerKind::kConv2d,
       .filters = 3,
       .kernel = 3,
       .stride = 1,
       .padding = kSamePadding,
       .activation = act},
      {.kind = LayerKind::kAvgPool2d, .kernel = 2},
      {.kind = LayerKind::kConv2d, .filters = 4, .kernel = 2, .stride = 1, .padding = 0},
      {.kind = LayerKind::kActivation, .activation = act},
      {.kind = LayerKind::kAvgPool2d, .kernel = 2},
      {.kind = LayerKind::kFlatten},
      {.kind = LayerKind::kDense, .units = 5, .activation = act},
      {.kind = LayerKind::kDropout, .rate = 0.0f},
      {.kind = LayerKind::kDense, .units = 3},
  };
  return spec;
}

BOOST_AUTO_TEST_SUITE(sequential_model)

BOOST_AUTO_TEST_CASE(spec_text_round_trips) {
  ModelSpec spec = SmallCnn(Activation::kRelu);
  spec.layers[1].kind = LayerKind::kMaxPool2d;
  spec.layers[7].rate = 0.25f;
  BOOST_TEST_REQUIRE(ValidateModelSpec(spec).ok(), ValidateModelSpec(spec).message());
  const std::string text = FormatModelSpec(spec);
  BOOST_TEST(text.find("sequential inputs=96 outputs=3 shape=2x8x6") == 0u, text);
  Result<ModelSpec> back = ParseModelSpec(text);
  BOOST_TEST_REQUIRE(back.ok(), back.status().message());
  BOOST_TEST((back.value() == spec));
  // A spec written before layer lists existed still reads as it did.
  Result<ModelSpec> old = ParseModelSpec(
      "mlp inputs=784 hidden=128 activation=relu outputs=10 loss=softmax_xent init=auto");
  BOOST_TEST_REQUIRE(old.ok());
  BOOST_TEST(old.value().layers.empty());
}

BOOST_AUTO_TEST_CASE(validation_names_the_layer_and_why) {
  ModelSpec spec = SmallCnn(Activation::kRelu);
  spec.layers[2].kernel = 5;  // on the 3x4x3 output of the pool
  const Status big = ValidateModelSpec(spec);
  BOOST_TEST(big.message() ==
             "model: layer 3: conv2d on 3x4x3 (the output of layer 2): kernel 5 is larger than "
             "the input's height 4 "
             "padded by 0 on each side");
  spec = SmallCnn(Activation::kRelu);
  spec.layers.back().units = 4;
  BOOST_TEST(ValidateModelSpec(spec).message().find("the last layer gives 4 values per sample, "
                                                    "but the model has 3 outputs") !=
             std::string::npos);
  spec = SmallCnn(Activation::kRelu);
  spec.input_shape = {1, 8, 6};
  BOOST_TEST(ValidateModelSpec(spec).message() ==
             "model: input_shape 1x8x6 does not hold 96 inputs");
}

BOOST_AUTO_TEST_CASE(a_cnn_gradient_matches_finite_differences) {
  // Smooth throughout (tanh, average pools): no kink for a step to cross. Max-pooling's switches
  // are checked on separated values in layers_test.
  const ModelSpec spec = SmallCnn(Activation::kTanh);
  Model model(spec);
  const int rows = 3;
  std::mt19937 rng(4);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  math::FloatBuffer params(model.NumParams()), grad(model.NumParams());
  model.Init(params, 9);
  for (float& p : params) p += 0.05f * normal(rng);
  math::FloatBuffer x(static_cast<std::size_t>(rows) * spec.inputs);
  for (float& v : x) v = normal(rng);
  const std::vector<float> y = {0, 2, 1};
  const float wd = 0.01f;
  Workspace ws(model, rows);
  model.ForwardBackward(params.data(), x.data(), y.data(), rows, wd, grad.data(), ws);
  auto loss = [&] {
    return model.Evaluate(params.data(), x.data(), y.data(), rows, ws).loss_sum / rows +
           model.WeightDecayPenalty(params.data(), wd);
  };
  testing::CheckCentralDifferences(params, grad, loss);
}

BOOST_AUTO_TEST_CASE(an_mlp_is_the_dense_layers_it_stands_for) {
  ModelSpec mlp;
  mlp.type = ModelType::kMlp;
  mlp.inputs = 12;
  mlp.hidden = {7, 5};
  mlp.outputs = 4;
  mlp.loss = LossType::kSoftmaxCrossEntropy;
  ModelSpec listed = mlp;
  listed.type = ModelType::kSequential;
  listed.hidden.clear();
  listed.input_shape = {12, 1, 1};
  listed.layers = {{.kind = LayerKind::kDense, .units = 7},
                   {.kind = LayerKind::kActivation, .activation = Activation::kRelu},
                   {.kind = LayerKind::kDense, .units = 5, .activation = Activation::kRelu},
                   {.kind = LayerKind::kDense, .units = 4}};
  Model a(mlp), b(listed);
  BOOST_TEST_REQUIRE(a.NumParams() == b.NumParams());
  math::FloatBuffer pa(a.NumParams()), pb(b.NumParams());
  a.Init(pa, 3);
  b.Init(pb, 3);
  // Same He weights, except that the listed model's layer indexes count the relu layer.
  BOOST_TEST(std::equal(pa.begin(), pa.begin() + 12 * 7, pb.begin()));
  std::copy(pa.begin(), pa.end(), pb.begin());
  const int rows = 6;
  std::mt19937 rng(8);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  math::FloatBuffer x(static_cast<std::size_t>(rows) * 12), ga(pa.size()), gb(pb.size());
  for (float& v : x) v = normal(rng);
  const std::vector<float> y = {0, 1, 2, 3, 0, 1};
  Workspace wa(a, rows), wb(b, rows);
  const LossValue va = a.ForwardBackward(pa.data(), x.data(), y.data(), rows, 0.1f, ga.data(), wa);
  const LossValue vb = b.ForwardBackward(pb.data(), x.data(), y.data(), rows, 0.1f, gb.data(), wb);
  BOOST_TEST(va.loss_sum == vb.loss_sum);
  BOOST_TEST(ga == gb, boost::test_tools::per_element());
  BOOST_TEST(a.layers().size() == 3u);
  BOOST_TEST(b.layers().empty());
  BOOST_TEST(b.WeightRanges().size() == 3u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace sequential_model_test
}  // namespace dtrain::model
