// SummarizeModel: the model in the "training:" line, short and naming what each layer is; the
// stored text (FormatModelSpec) is left as checkpoints have it.
#include <boost/test/unit_test.hpp>
#include <string>

#include "core/model/model_summary.h"

namespace dtrain::model {
namespace model_summary_test {

LayerSpec Conv(int filters, int kernel) {
  LayerSpec conv;
  conv.kind = LayerKind::kConv2d;
  conv.filters = filters;
  conv.kernel = kernel;
  conv.stride = 1;
  conv.activation = math::Activation::kRelu;
  return conv;
}

LayerSpec Pool(int stride) {
  LayerSpec pool;
  pool.kind = LayerKind::kMaxPool2d;
  pool.kernel = 2;
  pool.stride = stride;
  return pool;
}

LayerSpec Of(LayerKind kind) {
  LayerSpec layer;
  layer.kind = kind;
  layer.rate = 0.25f;  // a dropout's
  return layer;
}

LayerSpec Dense(int units, math::Activation activation = math::Activation::kIdentity) {
  LayerSpec dense;
  dense.units = units;
  dense.activation = activation;
  return dense;
}

ModelSpec Spec(ModelType type, int inputs, int outputs) {
  ModelSpec spec;
  spec.type = type;
  spec.inputs = inputs;
  spec.outputs = outputs;
  return spec;
}

BOOST_AUTO_TEST_SUITE(model_summary)

BOOST_AUTO_TEST_CASE(shorthand_models_name_only_what_they_have) {
  BOOST_TEST(SummarizeModel(Spec(ModelType::kSoftmax, 784, 10)) ==
             "softmax inputs=784 outputs=10 loss=softmax_xent");
  ModelSpec linear = Spec(ModelType::kLinear, 8, 1);
  linear.loss = LossType::kMeanSquaredError;
  BOOST_TEST(SummarizeModel(linear) == "linear inputs=8 outputs=1 loss=mse");
  ModelSpec mlp = Spec(ModelType::kMlp, 784, 10);
  mlp.hidden = {256, 128};
  BOOST_TEST(SummarizeModel(mlp) ==
             "mlp inputs=784 hidden=256,128 activation=relu outputs=10 loss=softmax_xent");
}

// A last dense layer left to the data shows the model's outputs, never "units=0".
BOOST_AUTO_TEST_CASE(a_layer_list_reads_as_its_layers) {
  ModelSpec cnn = Spec(ModelType::kSequential, 784, 10);
  cnn.input_shape = {1, 28, 28};
  cnn.layers = {Conv(32, 3),
                Pool(2),
                Conv(64, 3),
                Pool(1),
                Of(LayerKind::kFlatten),
                Of(LayerKind::kDropout),
                Dense(128, math::Activation::kRelu),
                Dense(0)};
  BOOST_TEST(SummarizeModel(cnn) ==
             "1x28x28 > conv2d 32x3x3 relu > maxpool 2 > conv2d 64x3x3 relu > maxpool 2 stride 1 > "
             "flatten > dropout 0.25 > dense 128 relu > dense 10, loss=softmax_xent");
}

BOOST_AUTO_TEST_CASE(a_long_layer_list_shows_its_ends) {
  ModelSpec deep = Spec(ModelType::kSequential, 16, 2);
  deep.input_shape = {16, 1, 1};
  for (int i = 0; i < 20; ++i) deep.layers.push_back(Dense(8 + i, math::Activation::kTanh));
  deep.layers.push_back(Dense(2));
  const std::string line = SummarizeModel(deep);
  BOOST_TEST(line.rfind("16 > dense 8 tanh > dense 9 tanh > ", 0) == 0u, line);
  BOOST_TEST(line.find(" > ... (21 layers) > dense 27 tanh > dense 2, loss=softmax_xent") !=
                 std::string::npos,
             line);
  BOOST_TEST(line.find("dense 14 tanh") == std::string::npos, line);
  BOOST_TEST(line.size() < 200u, line);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace model_summary_test
}  // namespace dtrain::model
