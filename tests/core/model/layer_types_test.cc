// The layer registry (core/model/layer_type.h): one type per kind, each name read back as the
// layer it starts as, and the choices job-file messages list, in their order.
#include <boost/test/unit_test.hpp>
#include <set>
#include <string>

#include "core/model/layer_type.h"

namespace dtrain::model {
namespace layer_types_test {

BOOST_AUTO_TEST_SUITE(layer_types)

BOOST_AUTO_TEST_CASE(every_kind_has_exactly_one_type) {
  std::set<LayerKind> listed;
  for (const LayerType* type : LayerTypes()) {
    BOOST_TEST(listed.insert(type->kind).second);
    BOOST_TEST(type->make != nullptr);
    BOOST_TEST(!type->spellings.empty());
  }
  for (LayerKind kind :
       {LayerKind::kConv2d, LayerKind::kMaxPool2d, LayerKind::kAvgPool2d, LayerKind::kFlatten,
        LayerKind::kDense, LayerKind::kDropout, LayerKind::kBatchNorm, LayerKind::kActivation}) {
    BOOST_TEST((LayerTypeOf(kind).kind == kind));
  }
}

BOOST_AUTO_TEST_CASE(every_name_starts_its_own_kind_and_is_the_name_it_gets) {
  std::set<std::string_view> names;
  for (const LayerType* type : LayerTypes()) {
    for (const LayerSpelling& spelling : type->spellings) {
      BOOST_TEST_CONTEXT(spelling.name) {
        BOOST_TEST(names.insert(spelling.name).second);
        BOOST_TEST((spelling.start.kind == type->kind));
        const Result<LayerSpec> read = LayerOfType(spelling.name);
        BOOST_TEST_REQUIRE(read.ok());
        BOOST_TEST((read.value() == spelling.start));
        BOOST_TEST(LayerTypeName(spelling.start) == spelling.name);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(an_unknown_name_is_told_every_choice_in_order) {
  BOOST_TEST(LayerTypeChoices() ==
             "conv2d, maxpool2d, avgpool2d, flatten, dense, dropout, batchnorm, relu, tanh, "
             "sigmoid");
  const Result<LayerSpec> identity = LayerOfType("identity");
  BOOST_TEST_REQUIRE(!identity.ok());
  BOOST_TEST(identity.status().message() ==
             "layer type must be one of conv2d, maxpool2d, avgpool2d, flatten, dense, dropout, "
             "batchnorm, relu, tanh, sigmoid, got 'identity'");
}

// A layer's spec text has its own type's keys only.
BOOST_AUTO_TEST_CASE(spec_text_keys_belong_to_their_layer_type) {
  const Result<LayerSpec> pool = ParseLayerSpec("maxpool2d,size=3");
  BOOST_TEST_REQUIRE(pool.ok());
  BOOST_TEST(pool.value().kernel == 3);
  const Result<LayerSpec> borrowed = ParseLayerSpec("maxpool2d,kernel=3");
  BOOST_TEST_REQUIRE(!borrowed.ok());
  BOOST_TEST(borrowed.status().message() == "layer spec: unknown key 'kernel'");
  const Result<LayerSpec> bad = ParseLayerSpec("conv2d,filters=2,kernel=3,padding=wide");
  BOOST_TEST_REQUIRE(!bad.ok());
  BOOST_TEST(bad.status().message() == "model spec: padding expects an integer, got 'wide'");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace layer_types_test
}  // namespace dtrain::model
