#include <boost/test/unit_test.hpp>

#include "core/math/buffer.h"
#include "core/model/model.h"

namespace dtrain::model {
namespace spec_test {

BOOST_AUTO_TEST_SUITE(model_spec)

BOOST_AUTO_TEST_CASE(text_form_round_trips) {
  ModelSpec s;
  s.type = ModelType::kMlp;
  s.inputs = 784;
  s.hidden = {256, 128};
  s.activation = math::Activation::kTanh;
  s.outputs = 10;
  s.loss = LossType::kSoftmaxCrossEntropy;
  s.init = InitScheme::kXavier;
  const std::string text = FormatModelSpec(s);
  BOOST_TEST(text ==
             "mlp inputs=784 hidden=256,128 activation=tanh outputs=10 loss=softmax_xent "
             "init=xavier");
  auto parsed = ParseModelSpec(text);
  BOOST_REQUIRE(parsed.ok());
  BOOST_TEST((parsed.value() == s));
}

BOOST_AUTO_TEST_CASE(parse_fills_the_default_loss) {
  auto linear = ParseModelSpec("linear inputs=3 outputs=1");
  BOOST_REQUIRE(linear.ok());
  BOOST_TEST((linear.value().loss == LossType::kMeanSquaredError));
  auto logistic = ParseModelSpec("logistic inputs=3 outputs=1");
  BOOST_REQUIRE(logistic.ok());
  BOOST_TEST((logistic.value().loss == LossType::kBinaryCrossEntropy));
}

BOOST_AUTO_TEST_CASE(bad_specs_are_refused_with_the_field_named) {
  auto unknown = ParseModelSpec("cnn inputs=3");
  BOOST_REQUIRE(!unknown.ok());
  BOOST_TEST(unknown.status().message().find("linear, logistic, softmax, mlp") !=
             std::string::npos);
  auto huge = ParseModelSpec("mlp inputs=784 hidden=1000000000000 outputs=10");
  BOOST_TEST(!huge.ok());
  auto wide = ParseModelSpec("mlp inputs=784 hidden=100000000 outputs=10");
  BOOST_REQUIRE(!wide.ok());
  BOOST_TEST(wide.status().message().find("hidden") != std::string::npos);
  auto mismatch = ParseModelSpec("softmax inputs=4 outputs=3 loss=mse");
  BOOST_REQUIRE(!mismatch.ok());
  BOOST_TEST(mismatch.status().message().find("mse") != std::string::npos);
  auto hidden_on_softmax = ParseModelSpec("softmax inputs=4 hidden=3 outputs=3");
  BOOST_TEST(!hidden_on_softmax.ok());
}

BOOST_AUTO_TEST_CASE(layers_are_contiguous_views_of_one_vector) {
  ModelSpec s;
  s.type = ModelType::kMlp;
  s.inputs = 784;
  s.hidden = {256, 128};
  s.outputs = 10;
  Model m(s);
  BOOST_TEST(m.NumParams() == 784u * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
  std::size_t expected = 0;
  for (const LayerView& layer : m.layers()) {
    BOOST_TEST(layer.weight_offset == expected);
    BOOST_TEST(layer.bias_offset == expected + static_cast<std::size_t>(layer.in) * layer.out);
    expected = layer.bias_offset + layer.out;
  }
  BOOST_TEST(expected == m.NumParams());
}

BOOST_AUTO_TEST_CASE(init_is_a_function_of_the_seed_with_the_right_scale) {
  ModelSpec s;
  s.type = ModelType::kMlp;
  s.inputs = 400;
  s.hidden = {300};
  s.outputs = 10;
  Model m(s);
  math::FloatBuffer a(m.NumParams()), b(m.NumParams()), c(m.NumParams());
  m.Init(a, 1);
  m.Init(b, 1);
  m.Init(c, 2);
  BOOST_TEST((a == b));
  BOOST_TEST((a != c));
  // He for the relu layer: variance 2/in.
  const LayerView& first = m.layers()[0];
  double sum_sq = 0.0;
  const std::size_t n = static_cast<std::size_t>(first.in) * first.out;
  for (std::size_t i = 0; i < n; ++i) sum_sq += a[first.weight_offset + i] * a[first.weight_offset + i];
  BOOST_TEST(sum_sq / n == 2.0 / 400, boost::test_tools::tolerance(0.05));
  // Biases start at zero.
  for (int i = 0; i < first.out; ++i) BOOST_TEST(a[first.bias_offset + i] == 0.0f);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace spec_test
}  // namespace dtrain::model
