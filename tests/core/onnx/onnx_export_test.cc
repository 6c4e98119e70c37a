// The ONNX exporter on each layer type, each model type and loss, each scaling, and sparse models:
// every model it builds passes onnx's checker and strict, type-checking shape inference (which
// EncodeOnnx runs, failing with "internal error"), and what it refuses it refuses with the
// reason. The numbers are checked against a real runtime end to end (tests/cmd/onnx_run_test.cc).
#include "core/onnx/onnx_export.h"

#include <boost/test/unit_test.hpp>
#include <string>

#include "core/model/layer_type.h"
#include "core/model/model.h"

namespace dtrain::onnx_export {
namespace onnx_export_test {

// A model file of `spec_text` with parameters from Init, scaled by `scaling`.
train::ModelFile FileOf(const std::string& spec_text, data::Scaling scaling = {}) {
  Result<model::ModelSpec> spec = model::ParseModelSpec(spec_text);
  BOOST_REQUIRE_MESSAGE(spec.ok(), spec.status().message());
  const model::Model net(spec.value());
  train::ModelFile file;
  file.spec = spec.value();
  file.scaling = std::move(scaling);
  file.params.resize(net.NumParams());
  net.Init(file.params, 3);
  return file;
}

void RequireExports(const train::ModelFile& file) {
  BOOST_TEST_INFO(model::FormatModelSpec(file.spec));
  Result<std::string> bytes = EncodeOnnx(file);
  BOOST_TEST_REQUIRE(bytes.ok(), bytes.status().message());
  BOOST_TEST(!bytes.value().empty());
}

data::Scaling Standardize(std::size_t features) {
  data::Scaling s;
  s.kind = data::Scaling::Kind::kStandardize;
  for (std::size_t i = 0; i < features; ++i) {
    s.mean.push_back(0.1f * static_cast<float>(i));
    s.inv_std.push_back(1.0f + 0.01f * static_cast<float>(i));
  }
  return s;
}

BOOST_AUTO_TEST_SUITE(onnx_export)

BOOST_AUTO_TEST_CASE(every_layer_type_has_a_graph_form) {
  for (const model::LayerType* type : model::LayerTypes()) {
    BOOST_TEST_INFO(type->spellings.front().name);
    BOOST_TEST(type->write_graph != nullptr);
  }
}

BOOST_AUTO_TEST_CASE(the_shorthand_models_export_with_every_activation_and_loss) {
  for (const char* spec :
       {"linear inputs=5 outputs=1 loss=mse init=auto",
        "logistic inputs=5 outputs=1 loss=bce init=auto",
        "softmax inputs=5 outputs=4 loss=softmax_xent init=auto",
        "mlp inputs=6 hidden=8,4 activation=relu outputs=3 loss=softmax_xent init=auto",
        "mlp inputs=6 hidden=8 activation=tanh outputs=1 loss=bce init=auto",
        "mlp inputs=6 hidden=8 activation=sigmoid outputs=1 loss=mse init=auto",
        "mlp inputs=6 hidden=8 activation=identity outputs=2 loss=softmax_xent init=auto"}) {
    RequireExports(FileOf(spec));
    RequireExports(FileOf(spec, data::ConstantScaling(255.0f)));
    RequireExports(FileOf(spec, Standardize(FileOf(spec).spec.inputs)));
  }
}

BOOST_AUTO_TEST_CASE(each_layer_of_a_layer_list_exports) {
  const std::string head =
      "sequential inputs=108 outputs=3 shape=3x6x6 loss=softmax_xent init=auto ";
  for (const char* layers :
       {"layer=conv2d,filters=4,kernel=3,stride=1,padding=same,activation=relu",
        "layer=conv2d,filters=4,kernel=3,stride=2,padding=0,activation=tanh",
        "layer=conv2d,filters=2,kernel=2,stride=2,padding=1,activation=sigmoid",
        "layer=maxpool2d,size=2,stride=2", "layer=avgpool2d,size=3,stride=1",
        "layer=batchnorm,momentum=0.1,eps=1e-05", "layer=flatten", "layer=dropout,rate=0.5",
        "layer=relu", "layer=tanh", "layer=sigmoid"}) {
    // The layer on the image, then a dense layer on its output taken flat.
    RequireExports(FileOf(head + layers + " layer=dense,activation=identity", Standardize(108)));
  }
  // Layers on a flat vector: batchnorm over features, conv2d and pooling on 1x1 "images".
  RequireExports(FileOf(
      "sequential inputs=12 outputs=1 shape=12 loss=bce init=auto "
      "layer=batchnorm,momentum=0.1,eps=1e-05 layer=conv2d,filters=5,kernel=1,stride=1,padding=0,"
      "activation=relu layer=maxpool2d,size=1,stride=1 layer=dense,activation=identity"));
}

BOOST_AUTO_TEST_CASE(a_file_whose_parameters_do_not_fit_its_spec_is_refused) {
  train::ModelFile file = FileOf("linear inputs=5 outputs=1 loss=mse init=auto");
  file.params.resize(3);
  Result<std::string> bytes = EncodeOnnx(file);
  BOOST_REQUIRE(!bytes.ok());
  BOOST_TEST(bytes.status().message() == "the model has 3 parameters, its spec needs 6");
}

sparse::SparseModelFile SparseFile(sparse::SparseModelType type, int hash_bits,
                                   std::uint64_t features) {
  sparse::SparseModelFile file;
  file.spec = {.type = type, .classes = 3, .factors = 2};
  file.hash_bits = hash_bits;
  file.features = features;
  if (type != sparse::SparseModelType::kSoftmax) file.spec.classes = 2;
  const sparse::SparseModel model(file.spec);
  file.keys = {0, 7, 3};
  for (std::size_t i = 0; i < file.keys.size() * model.SlotWidth(); ++i) {
    file.slots.push_back(0.01f * static_cast<float>(i));
  }
  file.globals.assign(model.GlobalWidth(), 0.5f);
  return file;
}

BOOST_AUTO_TEST_CASE(sparse_models_export_as_dense_models_over_a_small_index_space) {
  for (auto type : {sparse::SparseModelType::kLogistic, sparse::SparseModelType::kSoftmax,
                    sparse::SparseModelType::kFm}) {
    for (const auto& [bits, features] :
         {std::pair<int, std::uint64_t>{0, 10}, {0, 0}, {4, 0}, {20, 0}}) {
      BOOST_TEST_INFO(sparse::SparseModelTypeName(type) << " hash_bits " << bits);
      Result<std::string> bytes = EncodeSparseOnnx(SparseFile(type, bits, features));
      BOOST_TEST(bytes.ok(), bytes.status().message());
    }
  }
}

BOOST_AUTO_TEST_CASE(a_sparse_model_over_too_many_features_is_refused_with_the_reason) {
  Result<std::string> hashed =
      EncodeSparseOnnx(SparseFile(sparse::SparseModelType::kLogistic, 21, 0));
  BOOST_REQUIRE(!hashed.ok());
  BOOST_TEST(hashed.status().message().find("data.hash_bits = 21 gives 2097152 hashed features, "
                                            "more than 1048576 (2^20)") != std::string::npos,
             hashed.status().message());
  Result<std::string> wide =
      EncodeSparseOnnx(SparseFile(sparse::SparseModelType::kFm, 0, 5'000'000));
  BOOST_REQUIRE(!wide.ok());
  BOOST_TEST(wide.status().message().find("its data has 5000000 features") != std::string::npos,
             wide.status().message());
}

BOOST_AUTO_TEST_CASE(a_sparse_key_outside_the_features_is_refused) {
  Result<std::string> bytes =
      EncodeSparseOnnx(SparseFile(sparse::SparseModelType::kLogistic, 0, 5));
  BOOST_REQUIRE(!bytes.ok());
  BOOST_TEST(bytes.status().message() == "key 7 lies outside the model's 5 features");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace onnx_export_test
}  // namespace dtrain::onnx_export
