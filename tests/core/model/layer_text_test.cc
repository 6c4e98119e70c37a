// The text every layer type writes into a model spec (checkpoints, model files and rendezvous
// messages carry it): byte for byte what earlier versions wrote, so their files still load,
// and read back into the same layers.
#include <boost/test/unit_test.hpp>
#include <string>

#include "core/model/spec.h"

namespace dtrain::model {
namespace layer_text_test {

using math::Activation;

// Every layer type on 1x8x8 images, with keys set away from their defaults where they have any.
ModelSpec EveryLayerType() {
  ModelSpec s;
  s.type = ModelType::kSequential;
  s.inputs = 64;
  s.input_shape = {1, 8, 8};
  s.outputs = 3;
  s.layers = {{.kind = LayerKind::kConv2d,
               .filters = 4,
               .kernel = 3,
               .stride = 1,
               .padding = kSamePadding,
               .activation = Activation::kRelu},
              {.kind = LayerKind::kBatchNorm, .momentum = 0.05f, .epsilon = 1e-3f},
              {.kind = LayerKind::kMaxPool2d, .kernel = 2, .stride = 2},
              {.kind = LayerKind::kConv2d, .filters = 2, .kernel = 2, .stride = 1, .padding = 1},
              {.kind = LayerKind::kAvgPool2d, .kernel = 2, .stride = 1},
              {.kind = LayerKind::kActivation, .activation = Activation::kTanh},
              {.kind = LayerKind::kFlatten},
              {.kind = LayerKind::kDropout, .rate = 0.25f},
              {.kind = LayerKind::kDense, .units = 5, .activation = Activation::kSigmoid},
              {.kind = LayerKind::kActivation, .activation = Activation::kRelu},
              {.kind = LayerKind::kActivation, .activation = Activation::kSigmoid},
              {.kind = LayerKind::kDense}};
  return s;
}

BOOST_AUTO_TEST_SUITE(layer_text)

BOOST_AUTO_TEST_CASE(every_layer_type_writes_the_text_it_always_wrote_and_reads_it_back) {
  const ModelSpec s = EveryLayerType();
  const std::string text = FormatModelSpec(s);
  BOOST_TEST(text ==
             "sequential inputs=64 outputs=3 shape=1x8x8 loss=softmax_xent init=auto "
             "layer=conv2d,filters=4,kernel=3,stride=1,padding=same,activation=relu "
             "layer=batchnorm,momentum=0.05,eps=0.001 layer=maxpool2d,size=2,stride=2 "
             "layer=conv2d,filters=2,kernel=2,stride=1,padding=1,activation=identity "
             "layer=avgpool2d,size=2,stride=1 layer=tanh layer=flatten layer=dropout,rate=0.25 "
             "layer=dense,units=5,activation=sigmoid layer=relu layer=sigmoid "
             "layer=dense,units=0,activation=identity");
  const Result<ModelSpec> back = ParseModelSpec(text);
  BOOST_TEST_REQUIRE(back.ok(), back.status().message());
  BOOST_TEST((back.value() == s));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace layer_text_test
}  // namespace dtrain::model
