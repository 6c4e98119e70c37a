// Job files with a layer list: [model] type = "sequential", input_shape and [[model.layers]]
// read into the model spec, written back by FormatResolvedJob, and every mistake reported at its
// line and column with the layer and the reason.
#include <boost/test/unit_test.hpp>
#include <string>
#include <string_view>

#include "config/diagnostic_checks.h"
#include "config/job_file.h"

namespace dtrain::config {
namespace layer_list_test {

using testing::CheckDiagnostics;

LoadResult Parse(std::string_view text) {
  return ParseJobText(text, "cnn.toml", {}, (testing::TestData() / "jobs").string());
}

// Blobs of 64 features, seen as 8x8 images.
constexpr std::string_view kHead = R"([data]
format = "synthetic"
features = 64
[train]
epochs = 1
[model]
type = "sequential"
input_shape = [1, 8, 8]
)";

BOOST_AUTO_TEST_SUITE(layer_list)

BOOST_AUTO_TEST_CASE(layers_are_read_with_their_defaults_and_written_back) {
  const std::string text = std::string(kHead) + R"(
[[model.layers]]
type = "conv2d"
filters = 4
kernel = 3
padding = "same"
activation = "relu"
[[model.layers]]
type = "maxpool2d"
[[model.layers]]
type = "dropout"
rate = 0.25
[[model.layers]]
type = "tanh"
[[model.layers]]
type = "flatten"
[[model.layers]]
type = "batchnorm"
momentum = 0.05
[[model.layers]]
type = "dense"
)";
  const LoadResult r = Parse(text);
  for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_TEST_REQUIRE(r.ok());
  const model::ModelSpec& m = r.job->model;
  BOOST_TEST((m.type == model::ModelType::kSequential));
  BOOST_TEST((m.input_shape == model::Shape{1, 8, 8}));
  BOOST_TEST(m.inputs == 64);
  BOOST_TEST_REQUIRE(m.layers.size() == 7u);
  BOOST_TEST((m.layers[0] == model::LayerSpec{.kind = model::LayerKind::kConv2d,
                                              .filters = 4,
                                              .kernel = 3,
                                              .stride = 1,
                                              .padding = model::kSamePadding,
                                              .activation = math::Activation::kRelu}));
  BOOST_TEST((m.layers[1] ==
              model::LayerSpec{.kind = model::LayerKind::kMaxPool2d, .kernel = 2, .stride = 2}));
  BOOST_TEST(m.layers[2].rate == 0.25f);
  BOOST_TEST((m.layers[3].activation == math::Activation::kTanh));
  BOOST_TEST(m.layers[5].momentum == 0.05f);
  BOOST_TEST(m.layers[5].epsilon == 1e-5f);
  BOOST_TEST(m.layers[6].units == 0);  // the outputs, from the data
  BOOST_TEST((m.loss == model::LossType::kSoftmaxCrossEntropy));

  const LoadResult back = ParseJobText(FormatResolvedJob(*r.job), "again.toml", {}, "/");
  for (const Diagnostic& d : back.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_TEST_REQUIRE(back.ok());
  BOOST_TEST((back.job->model == m));
}

// The [[model.layers]] tables of a resolved job, byte for byte as earlier versions wrote them.
BOOST_AUTO_TEST_CASE(every_layer_type_is_written_back_as_it_always_was) {
  const std::string text = std::string(kHead) + R"(
[[model.layers]]
type = "conv2d"
filters = 4
kernel = 3
padding = "same"
activation = "relu"
[[model.layers]]
type = "batchnorm"
momentum = 0.05
eps = 0.001
[[model.layers]]
type = "maxpool2d"
[[model.layers]]
type = "conv2d"
filters = 2
kernel = 2
padding = 1
[[model.layers]]
type = "avgpool2d"
size = 2
stride = 1
[[model.layers]]
type = "tanh"
[[model.layers]]
type = "flatten"
[[model.layers]]
type = "dropout"
rate = 0.25
[[model.layers]]
type = "dense"
units = 5
activation = "sigmoid"
[[model.layers]]
type = "relu"
[[model.layers]]
type = "sigmoid"
[[model.layers]]
type = "dense"
)";
  const LoadResult r = Parse(text);
  for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_TEST_REQUIRE(r.ok());
  const std::string written = FormatResolvedJob(*r.job);
  const std::size_t from = written.find("input_shape");
  const std::size_t to = written.find("[train]", from);
  BOOST_TEST_REQUIRE(to != std::string::npos);
  BOOST_TEST(written.substr(from, to + 8 - from) == R"(input_shape = [1, 8, 8]

[[model.layers]]
type = "conv2d"
filters = 4
kernel = 3
stride = 1
padding = "same"
activation = "relu"

[[model.layers]]
type = "batchnorm"
momentum = 0.05
eps = 0.001

[[model.layers]]
type = "maxpool2d"
size = 2
stride = 2

[[model.layers]]
type = "conv2d"
filters = 2
kernel = 2
stride = 1
padding = 1
activation = "identity"

[[model.layers]]
type = "avgpool2d"
size = 2
stride = 1

[[model.layers]]
type = "tanh"

[[model.layers]]
type = "flatten"

[[model.layers]]
type = "dropout"
rate = 0.25

[[model.layers]]
type = "dense"
units = 5
activation = "sigmoid"

[[model.layers]]
type = "relu"

[[model.layers]]
type = "sigmoid"

[[model.layers]]
type = "dense"
activation = "identity"

[train]
)");
}

BOOST_AUTO_TEST_CASE(each_mistake_is_placed_at_its_layer) {
  const std::string text = std::string(kHead) + R"(activation = "relu"
[[model.layers]]
type = "conv3d"
[[model.layers]]
type = "conv2d"
kernel = 3
paddding = 1
[[model.layers]]
type = "dense"
units = 0
[[model.layers]]
type = "dropout"
rate = 1.0
[[model.layers]]
type = "dense"
)";
  CheckDiagnostics(
      Parse(text),
      {{"cnn.toml", 9, 14, "model.activation", "is not used by type \"sequential\""},
       {"cnn.toml", 11, 8, "model.layers[1].type", "must be one of: conv2d, maxpool2d"},
       {"cnn.toml", 12, 1, "model.layers[2].filters", "conv2d needs filters"},
       {"cnn.toml", 15, 1, "model.layers[2].paddding", "unknown key; did you mean 'padding'?"},
       {"cnn.toml", 18, 9, "model.layers[3].units", "must be an integer in [1, 16777216], got 0"},
       {"cnn.toml", 21, 8, "model.layers[4].rate", "must be a number in [0, 1), got 1"}});
}

// A key a layer's type does not have is told with that type's keys, never with a key of another
// layer (a conv2d's kernel for a maxpool2d).
BOOST_AUTO_TEST_CASE(an_unknown_layer_key_names_its_own_layers_keys) {
  const std::string text = std::string(kHead) + R"([[model.layers]]
type = "conv2d"
filters = 2
kernel = 3
[[model.layers]]
type = "maxpool2d"
kernel = 2
[[model.layers]]
type = "dense"
)";
  CheckDiagnostics(Parse(text), {{"cnn.toml", 15, 1, "model.layers[2].kernel",
                                  "unknown key; allowed: type, size, stride"}});
}

BOOST_AUTO_TEST_CASE(a_layer_that_does_not_fit_its_input_says_which_and_why) {
  const std::string text = std::string(kHead) + R"(
[[model.layers]]
type = "conv2d"
filters = 2
kernel = 3
[[model.layers]]
type = "maxpool2d"
size = 4
[[model.layers]]
type = "conv2d"
filters = 2
kernel = 2
[[model.layers]]
type = "dense"
)";
  CheckDiagnostics(Parse(text),
                   {{"cnn.toml", 18, 8, "model.layers[3].type",
                     "conv2d on 2 (the output of layer 2): kernel 2 is larger than the "
                     "input's height 1 padded by 0 on each side"}});
  const std::string unfinished = std::string(kHead) + R"(
[[model.layers]]
type = "conv2d"
filters = 2
kernel = 3
)";
  CheckDiagnostics(Parse(unfinished),
                   {{"cnn.toml", 11, 8, "model.layers[1].type",
                     "the last layer gives 2x6x6 values per sample; end with a dense layer"}});
}

BOOST_AUTO_TEST_CASE(layer_keys_belong_to_sequential_models_only) {
  CheckDiagnostics(
      Parse(R"([data]
format = "synthetic"
[train]
epochs = 1
[model]
type = "mlp"
input_shape = [1, 2]
[[model.layers]]
type = "dense"
)"),
      {{"cnn.toml", 7, 15, "model.input_shape", "is only allowed for type \"sequential\""},
       {"cnn.toml", 8, 1, "model.layers", "is only allowed for type \"sequential\""}});
}

BOOST_AUTO_TEST_CASE(augmentation_needs_images) {
  const std::string cnn = std::string(kHead) + R"(
[[model.layers]]
type = "dense"
)";
  const std::string with_augment = "[data]\naugment_crop = 2\naugment_flip = true\n";
  std::string text = cnn;
  text.replace(0, std::string("[data]\n").size(), with_augment);
  const LoadResult r = Parse(text);
  for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_TEST_REQUIRE(r.ok());
  BOOST_TEST(r.job->data.augment.crop_padding == 2);
  BOOST_TEST(r.job->data.augment.flip);
  CheckDiagnostics(Parse(with_augment + R"(format = "synthetic"
[train]
epochs = 1
)"),
                   {{"cnn.toml", 2, 16, "data.augment_crop", "needs images: format \"idx\""}});
}

BOOST_AUTO_TEST_CASE(lbfgs_refuses_dropout) {
  const std::string text = std::string(kHead) + R"(
[[model.layers]]
type = "dropout"
rate = 0.5
[[model.layers]]
type = "dense"
[optimizer]
type = "lbfgs"
)";
  CheckDiagnostics(Parse(text), {{"cnn.toml", 16, 8, "optimizer.type",
                                  "model.layers[1] is a dropout layer, whose random masks"}});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace layer_list_test
}  // namespace dtrain::config
