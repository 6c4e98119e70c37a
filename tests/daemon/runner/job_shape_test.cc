// ResolveJobShape and CheckJobShapes: the spec LoadJobData resolves, for every data format, with
// the same errors (a NumPy array's image shape included); CheckJobShapes also every error of the
// test file.
#include <boost/test/unit_test.hpp>
#include <string>
#include <utility>

#include "common/idx_files.h"
#include "common/npy_files.h"
#include "common/temp_dir.h"
#include "config/job_file.h"
#include "daemon/runner/job_data.h"

namespace dtrain::runner {
namespace job_shape_test {

using dtrain::testing::IdxBytes;
using dtrain::testing::NpyBytes;
using dtrain::testing::NpyDict;
using dtrain::testing::TempDir;

// The job described by `toml`, its relative paths resolved against `dir`.
config::JobConfig Job(const std::string& toml, const TempDir& dir) {
  config::LoadResult loaded = config::ParseJobText(toml, "job.toml", {}, dir.Path(""));
  for (const config::Diagnostic& d : loaded.diagnostics) {
    BOOST_TEST_MESSAGE(config::FormatDiagnostic(d));
  }
  BOOST_REQUIRE(loaded.ok());
  return *loaded.job;
}

// ResolveJobShape finds the spec LoadJobData does, with `inputs` and `outputs`, and so does
// CheckJobShapes.
void CheckSameSpec(const config::JobConfig& job, int inputs, int outputs) {
  const Result<model::ModelSpec> shape = ResolveJobShape(job);
  BOOST_TEST_REQUIRE(shape.ok(), shape.status().message());
  const Result<JobData> data = LoadJobData(job);
  BOOST_TEST_REQUIRE(data.ok(), data.status().message());
  const model::ModelSpec& loaded = data.value().spec;
  const Result<model::ModelSpec> checked = CheckJobShapes(job);
  BOOST_TEST_REQUIRE(checked.ok(), checked.status().message());
  BOOST_TEST((checked.value() == loaded));
  BOOST_TEST(shape.value().inputs == loaded.inputs);
  BOOST_TEST(shape.value().outputs == loaded.outputs);
  BOOST_TEST(shape.value().hidden == loaded.hidden, boost::test_tools::per_element());
  BOOST_TEST((shape.value() == loaded), model::FormatModelSpec(shape.value())
                                            << " vs " << model::FormatModelSpec(loaded));
  BOOST_TEST(shape.value().inputs == inputs);
  BOOST_TEST(shape.value().outputs == outputs);
}

// Both fail with the same message, which contains `fragment`.
void CheckSameError(const config::JobConfig& job, const std::string& fragment) {
  const Result<model::ModelSpec> shape = ResolveJobShape(job);
  BOOST_TEST_REQUIRE(!shape.ok());
  const Result<JobData> data = LoadJobData(job);
  BOOST_TEST_REQUIRE(!data.ok());
  BOOST_TEST(shape.status().message() == data.status().message());
  BOOST_TEST(shape.status().message().find(fragment) != std::string::npos,
             shape.status().message());
  const Result<model::ModelSpec> checked = CheckJobShapes(job);
  BOOST_TEST_REQUIRE(!checked.ok());
  BOOST_TEST(checked.status().message() == data.status().message());
}

// The test file's own errors: CheckJobShapes says what LoadJobData says, where ResolveJobShape,
// which never reads the test file, finds none.
void CheckTestFileError(const config::JobConfig& job, const std::string& fragment) {
  BOOST_TEST(ResolveJobShape(job).ok());
  const Result<JobData> data = LoadJobData(job);
  BOOST_TEST_REQUIRE(!data.ok());
  const Result<model::ModelSpec> checked = CheckJobShapes(job);
  BOOST_TEST_REQUIRE(!checked.ok());
  BOOST_TEST(checked.status().message() == data.status().message());
  BOOST_TEST(checked.status().message().find(fragment) != std::string::npos,
             checked.status().message());
}

// Four 2x3 images and labels 0, 4, 1, 0: 6 features, 5 classes.
const std::string kImages = IdxBytes(0x803, {4, 2, 3}, std::string(24, '\x7f'));
const std::string kLabels = IdxBytes(0x801, {4}, std::string("\x00\x04\x01\x00", 4));

// An idx job on the files `images` and `labels` (in the job's directory) with `model` keys.
std::string IdxJob(const std::string& images, const std::string& labels, const std::string& model) {
  return "[data]\nformat = \"idx\"\ntrain = \"" + images + "\"\ntrain_labels = \"" + labels +
         "\"\nvalidation_fraction = 0.25\n[model]\n" + model;
}

BOOST_AUTO_TEST_SUITE(job_shape)

BOOST_AUTO_TEST_CASE(synthetic_blobs_from_the_config_alone) {
  TempDir dir;
  CheckSameSpec(Job("[data]\nformat = \"synthetic\"\nfeatures = 5\nclasses = 4\n"
                    "[model]\ntype = \"mlp\"\nhidden = [8]\n",
                    dir),
                5, 4);
  CheckSameSpec(Job("[data]\nformat = \"synthetic\"\n", dir), 2, 3);  // the defaults
}

BOOST_AUTO_TEST_CASE(synthetic_teacher_is_a_regression) {
  TempDir dir;
  CheckSameSpec(Job("[data]\nformat = \"synthetic\"\nsynthetic = \"linear\"\nfeatures = 7\n"
                    "[model]\ntype = \"linear\"\nloss = \"mse\"\n",
                    dir),
                7, 1);
}

BOOST_AUTO_TEST_CASE(synthetic_checks_model_keys_against_the_config) {
  TempDir dir;
  CheckSameError(Job("[data]\nformat = \"synthetic\"\nfeatures = 5\n[model]\ninputs = 3\n", dir),
                 "model.inputs is 3 but synthetic:blobs");
  CheckSameError(Job("[data]\nformat = \"synthetic\"\nclasses = 4\n[model]\noutputs = 3\n", dir),
                 "has labels up to 3");
}

BOOST_AUTO_TEST_CASE(idx_plain_and_gzip_from_headers_and_labels) {
  TempDir dir;
  dir.Write("images", kImages);
  dir.Write("labels", kLabels);
  dir.WriteGz("images.gz", kImages);
  dir.WriteGz("labels.gz", kLabels);
  for (const auto& [images, labels] : {std::pair{"images", "labels"}, {"images.gz", "labels.gz"}}) {
    BOOST_TEST_CONTEXT(images) {
      CheckSameSpec(Job(IdxJob(images, labels, "type = \"softmax\"\n"), dir), 6, 5);
    }
  }
}

BOOST_AUTO_TEST_CASE(idx_errors_match_load_job_data) {
  TempDir dir;
  dir.Write("images", kImages);
  dir.Write("labels", kLabels);
  CheckSameError(Job(IdxJob("images", "labels", "inputs = 5\n"), dir),
                 "model.inputs is 5 but " + dir.Path("images") + " [train split] has 6 features");
  CheckSameError(
      Job(IdxJob("images", "labels", "outputs = 4\n"), dir),
      "model.outputs is 4 but " + dir.Path("images") + " [train split] has labels up to 4");
  dir.Write("three-labels", IdxBytes(0x801, {3}, std::string("\x00\x01\x02", 3)));
  CheckSameError(Job(IdxJob("images", "three-labels", ""), dir), "another number of labels than");
  // A layer that does not fit the images' shape is said at its line, as with input_shape given.
  CheckSameError(Job(IdxJob("images", "labels",
                            "type = \"sequential\"\n[[model.layers]]\ntype = \"conv2d\"\n"
                            "filters = 2\nkernel = 3\n[[model.layers]]\ntype = \"dense\"\n"),
                     dir),
                 "job.toml:9:8: model.layers[1].type: conv2d on 1x2x3 (the output of input_shape): "
                 "kernel 3 is larger than the input's height 2");
}

BOOST_AUTO_TEST_CASE(idx_fashion_mnist,
                     *boost::unit_test::precondition(testing::FashionMnistPresent)) {
  TempDir dir;
  const auto file = [](const std::string& key, const std::string& name) {
    return key + " = \"" + testing::kFashionDir + "/" + name + "\"\n";
  };
  const std::string data =
      "[data]\nformat = \"idx\"\n" + file("train", "train-images-idx3-ubyte.gz") +
      file("train_labels", "train-labels-idx1-ubyte.gz") +
      file("test", "t10k-images-idx3-ubyte.gz") + file("test_labels", "t10k-labels-idx1-ubyte.gz");
  CheckSameSpec(Job(data + "[model]\ntype = \"mlp\"\nhidden = [32]\n", dir), 784, 10);
}

BOOST_AUTO_TEST_CASE(csv_reads_the_training_file) {
  TempDir dir;
  dir.Write("train.csv", "a,b,c,label\n1,2,3,0\n4,5,6,2\n7,8,9,1\n");
  const std::string job = "[data]\nformat = \"csv\"\ntrain = \"train.csv\"\n[model]\n";
  CheckSameSpec(Job(job, dir), 3, 3);
  CheckSameError(Job(job + "inputs = 4\n", dir), "model.inputs is 4 but");
  CheckSameError(Job(job + "outputs = 2\n", dir), "has labels up to 2");
}

// Binary logistic regression has one output for labels 0 and 1, in a separate test file too
// (which was once held to an output per class); a third class in either file is refused.
BOOST_AUTO_TEST_CASE(logistic_regression_takes_a_labelled_test_file_of_0_and_1) {
  TempDir dir;
  dir.Write("train.csv", "a,b,label\n1,2,0\n3,4,1\n5,6,1\n");
  dir.Write("test.csv", "a,b,label\n1,1,1\n2,2,0\n");
  dir.Write("three.csv", "a,b,label\n1,1,1\n2,2,2\n");
  const std::string job =
      "[data]\nformat = \"csv\"\ntrain = \"train.csv\"\ntest = \"test.csv\"\n[model]\n"
      "type = \"logistic\"\n";
  CheckSameSpec(Job(job, dir), 2, 1);
  const Result<JobData> data = LoadJobData(Job(job, dir));
  BOOST_REQUIRE(data.ok());
  BOOST_TEST(data.value().eval.rows == 2u);
  const Result<JobData> three = LoadJobData(Job(
      "[data]\nformat = \"csv\"\ntrain = \"train.csv\"\ntest = \"three.csv\"\n[model]\n"
      "type = \"logistic\"\n",
      dir));
  BOOST_REQUIRE(!three.ok());
  BOOST_TEST(three.status().message().find("needs labels 0/1, but " + dir.Path("three.csv")) !=
                 std::string::npos,
             three.status().message());
}

BOOST_AUTO_TEST_CASE(the_test_file_is_checked_against_the_training_file) {
  TempDir dir;
  dir.Write("train.csv", "a,b,c,label\n1,2,3,0\n4,5,6,2\n7,8,9,1\n");
  dir.Write("narrow.csv", "a,b,label\n1,2,0\n4,5,1\n");
  dir.Write("more-classes.csv", "a,b,c,label\n1,2,3,0\n4,5,6,7\n");
  dir.Write("fractional.csv", "a,b,c,label\n1,2,3,0.5\n");
  const auto job = [&](const std::string& test, const std::string& model) {
    return Job("[data]\nformat = \"csv\"\ntrain = \"train.csv\"\ntest = \"" + test +
                   "\"\n[model]\n" + model,
               dir);
  };
  CheckTestFileError(job("narrow.csv", ""),
                     dir.Path("narrow.csv") + " has 2 features but " + dir.Path("train.csv") +
                         " has 3");
  CheckTestFileError(job("more-classes.csv", ""), "model.outputs is 3 but " +
                                                      dir.Path("more-classes.csv") +
                                                      " has labels up to 7 (8 classes)");
  CheckTestFileError(job("fractional.csv", ""), dir.Path("fractional.csv") + ": line 2, column 4");
  // Explicit inputs and outputs spare ResolveJobShape the training file, not the checks.
  CheckTestFileError(job("narrow.csv", "inputs = 3\noutputs = 3\n"), " has 2 features but ");
}

// Outputs a layer list's last dense layer sets are blamed on its units, not on model.outputs.
BOOST_AUTO_TEST_CASE(too_few_units_on_the_last_layer_name_that_layer) {
  TempDir dir;
  dir.Write("train.csv", "a,b,c,label\n1,2,3,0\n4,5,6,9\n");
  CheckSameError(Job("[data]\nformat = \"csv\"\ntrain = \"train.csv\"\n[model]\n"
                     "type = \"sequential\"\n[[model.layers]]\ntype = \"dense\"\nunits = 4\n"
                     "activation = \"relu\"\n[[model.layers]]\ntype = \"dense\"\nunits = 5\n",
                     dir),
                 "model.layers[2].units is 5 but " + dir.Path("train.csv") +
                     " has labels up to 9 (10 classes)");
}

// A NumPy array of images of 3 channels: its channels x height x width is the default input_shape
// and the only image shape a layer list may give (a flat one takes the rows as they are).
BOOST_AUTO_TEST_CASE(npy_images_of_several_channels_set_and_hold_the_input_shape) {
  TempDir dir;
  dir.Write("x.npy", NpyBytes(NpyDict("|u1", "(4, 3, 2, 5)"), std::string(120, '\x01')));
  dir.Write("y.npy", NpyBytes(NpyDict("|u1", "(4,)"), std::string("\x00\x01\x02\x01", 4)));
  const auto job = [&](const std::string& shape) {
    return Job(
        "[data]\nformat = \"npy\"\ntrain = \"x.npy\"\ntrain_labels = \"y.npy\"\n"
        "[model]\ntype = \"sequential\"\n" +
            shape + "[[model.layers]]\ntype = \"dense\"\n",
        dir);
  };
  const Result<model::ModelSpec> spec = ResolveJobShape(job(""));
  BOOST_TEST_REQUIRE(spec.ok(), spec.status().message());
  BOOST_TEST((spec.value().input_shape == model::Shape{3, 2, 5}));
  CheckSameSpec(job(""), 30, 3);
  CheckSameSpec(job("input_shape = [3, 2, 5]\n"), 30, 3);
  CheckSameSpec(job("input_shape = [30]\n"), 30, 3);
  CheckSameError(job("input_shape = [3, 5, 2]\n"),
                 "model.input_shape 3x5x2 does not match " + dir.Path("x.npy") +
                     ", images of 3x2x5 (channels x height x width): set input_shape = [3, 2, 5]");
  CheckSameError(job("input_shape = [1, 2, 15]\n"), "model.input_shape 1x2x15 does not match");
}

BOOST_AUTO_TEST_CASE(explicit_inputs_and_outputs_read_no_file) {
  TempDir dir;
  dir.Write("train.csv", "a,b,label\n1,2,0\n3,4,1\n");
  config::JobConfig job = Job(
      "[data]\nformat = \"csv\"\ntrain = \"train.csv\"\n[model]\ninputs = 2\noutputs = 2\n", dir);
  CheckSameSpec(job, 2, 2);
  job.data.train = dir.Path("no-such-file.csv");
  const Result<model::ModelSpec> spec = ResolveJobShape(job);
  BOOST_TEST_REQUIRE(spec.ok(), spec.status().message());
  BOOST_TEST((spec.value() == job.model));
  BOOST_TEST(!LoadJobData(job).ok());  // which would have read it
  job.data.format = config::DataFormat::kIdx;
  BOOST_TEST(ResolveJobShape(job).ok());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace job_shape_test
}  // namespace dtrain::runner
