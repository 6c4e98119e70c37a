// NumPy input end to end through the real binary: arrays written by NumPy itself
// (tests/data/npy/write_blobs.py, Debian's python3-numpy) train to the same model, bit for bit,
// as the same numbers in CSV — from .npy files (float32 and float64), and from a .npz archive —
// with the features standardised and a validation split; the model predicts and evaluates those
// files as the CSV; a compressed .npz is refused saying why. Images of several channels
// (tests/data/npy/write_images.py) train and predict as the same images in dtrain's order.
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "core/codec/file_bytes.h"
#include "run_checks.h"

namespace dtrain::cli {
namespace npy_run_test {

using namespace run_checks;
using dtrain::testing::ProcessResult;
using dtrain::testing::RunProcess;
using dtrain::testing::TempDir;

// Every variant trains with these settings; only [data] differs.
constexpr const char* kTraining = R"(scale = "standardize"
validation_fraction = 0.2
[model]
type = "mlp"
hidden = [8]
activation = "tanh"
[train]
epochs = 3
batch_size = 16
seed = 11
[optimizer]
type = "adam"
lr = 0.01
)";

std::string TestData() {
  const char* dir = std::getenv("DTRAIN_TEST_DATA");
  BOOST_REQUIRE_MESSAGE(dir != nullptr, "DTRAIN_TEST_DATA is not set (run through ctest)");
  return dir;
}

// A small convolutional network on 3-channel images, trained as the blobs are; [model]
// input_shape, when given, comes before it.
constexpr const char* kImageTraining = R"(scale = "standardize"
validation_fraction = 0.2
[model]
type = "sequential"
[[model.layers]]
type = "conv2d"
filters = 4
kernel = 3
padding = "same"
activation = "relu"
[[model.layers]]
type = "maxpool2d"
[[model.layers]]
type = "dense"
[train]
epochs = 2
batch_size = 16
seed = 11
[optimizer]
type = "adam"
lr = 0.01
)";

// Runs the job of [data] `data` and then `training` in `dir` and exports its model; returns the
// model file's bytes.
std::string TrainAndExport(const TempDir& dir, const std::string& name, const std::string& data,
                           const std::string& training = kTraining) {
  const std::string job = dir.Write(name + ".toml", "name = \"blobs\"\n[data]\n" + data + training);
  const std::string db = dir.Path(name + ".db");
  const ProcessResult run = RunProcess({Bin(), "run", job, "--db", db}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(run.exit_code == 0, name + ": " + run.err);
  const std::string model = dir.Path(name + ".dtm");
  const ProcessResult exported =
      RunProcess({Bin(), "export", "1", "--db", db, "-o", model}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(exported.exit_code == 0, exported.err);
  Result<std::string> bytes = codec::ReadFileBytes(model);
  BOOST_REQUIRE_MESSAGE(bytes.ok(), bytes.status().message());
  return std::move(bytes).value();
}

BOOST_AUTO_TEST_SUITE(npy_run)

BOOST_AUTO_TEST_CASE(numpy_arrays_train_the_same_model_as_the_same_numbers_in_csv) {
  TempDir dir;
  const ProcessResult wrote = RunProcess(
      {"/usr/bin/python3", TestData() + "/npy/write_blobs.py", dir.Path("")}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(wrote.exit_code == 0, "write_blobs.py: " + wrote.err);

  const std::string csv = TrainAndExport(dir, "csv", "format = \"csv\"\ntrain = \"train.csv\"\n");
  const std::string npy =
      TrainAndExport(dir, "npy", "format = \"npy\"\ntrain = \"x.npy\"\ntrain_labels = \"y.npy\"\n");
  const std::string npy64 = TrainAndExport(
      dir, "npy64", "format = \"npy\"\ntrain = \"x64.npy\"\ntrain_labels = \"y.npy\"\n");
  const std::string npz = TrainAndExport(dir, "npz", "format = \"npy\"\ntrain = \"train.npz\"\n");
  BOOST_TEST(npy.size() > 100u);
  BOOST_TEST((npy == csv));
  BOOST_TEST((npy64 == csv));
  BOOST_TEST((npz == csv));

  // The model predicts and evaluates the NumPy files as the CSV.
  const std::string model = dir.Path("npy.dtm");
  const ProcessResult from_csv =
      RunProcess({Bin(), "predict", model, "--data", dir.Path("train.csv")}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(from_csv.exit_code == 0, from_csv.err);
  for (const char* file : {"x.npy", "train.npz"}) {
    const ProcessResult p =
        RunProcess({Bin(), "predict", model, "--data", dir.Path(file)}, dir.Path(""));
    BOOST_TEST(p.exit_code == 0, p.err);
    BOOST_TEST(p.out == from_csv.out, file);
  }
  const ProcessResult eval_csv =
      RunProcess({Bin(), "eval", model, "--data", dir.Path("train.csv"), "--json"}, dir.Path(""));
  const ProcessResult eval_npz =
      RunProcess({Bin(), "eval", model, "--data", dir.Path("train.npz"), "--json"}, dir.Path(""));
  const ProcessResult eval_npy = RunProcess(
      {Bin(), "eval", model, "--data", dir.Path("x.npy"), "--labels", dir.Path("y.npy"), "--json"},
      dir.Path(""));
  BOOST_TEST(eval_csv.exit_code == 0, eval_csv.err);
  BOOST_TEST(eval_npz.out == eval_csv.out);
  BOOST_TEST(eval_npy.out == eval_csv.out);
  const ProcessResult unlabelled =
      RunProcess({Bin(), "eval", model, "--data", dir.Path("x.npy")}, dir.Path(""));
  BOOST_TEST(unlabelled.exit_code == 2);
  BOOST_TEST(unlabelled.err.find("--labels PATH") != std::string::npos, unlabelled.err);

  // savez_compressed deflates its members: refused before the job is queued, saying why.
  const std::string packed = dir.Write(
      "packed.toml", "[data]\nformat = \"npy\"\ntrain = \"packed.npz\"\n" + std::string(kTraining));
  const ProcessResult refused =
      RunProcess({Bin(), "run", packed, "--db", dir.Path("packed.db")}, dir.Path(""));
  BOOST_TEST(refused.exit_code != 0);
  BOOST_TEST(refused.err.find(dir.Path("packed.npz") + ": its array 'x' is compressed") !=
                 std::string::npos,
             refused.err);
}

// Images of 3 channels written by NumPy as rows x channels x height x width train the same CNN,
// bit for bit, as the same images stored as rows of height, width, channel values (the order
// dtrain's layers read), with the input shape taken from the array; the model predicts both files
// alike; an input_shape that is not the array's channels x height x width is refused naming it.
BOOST_AUTO_TEST_CASE(images_of_several_channels_train_as_the_same_images_in_height_width_order) {
  TempDir dir;
  const ProcessResult wrote = RunProcess(
      {"/usr/bin/python3", TestData() + "/npy/write_images.py", dir.Path("")}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(wrote.exit_code == 0, "write_images.py: " + wrote.err);

  const std::string nchw = TrainAndExport(
      dir, "nchw", "format = \"npy\"\ntrain = \"nchw.npy\"\ntrain_labels = \"y.npy\"\n",
      kImageTraining);
  const std::string shape = "[model]\ninput_shape = [3, 6, 5]\n";
  std::string hwc_training = kImageTraining;
  hwc_training.replace(hwc_training.find("[model]\n"), 8, shape);
  const std::string hwc = TrainAndExport(
      dir, "hwc", "format = \"npy\"\ntrain = \"hwc.npy\"\ntrain_labels = \"y.npy\"\n",
      hwc_training);
  BOOST_TEST(nchw.size() > 100u);
  BOOST_TEST((nchw == hwc));

  const std::string model = dir.Path("nchw.dtm");
  const ProcessResult from_hwc =
      RunProcess({Bin(), "predict", model, "--data", dir.Path("hwc.npy")}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(from_hwc.exit_code == 0, from_hwc.err);
  const ProcessResult from_nchw =
      RunProcess({Bin(), "predict", model, "--data", dir.Path("nchw.npy")}, dir.Path(""));
  BOOST_TEST(from_nchw.exit_code == 0, from_nchw.err);
  BOOST_TEST(from_nchw.out == from_hwc.out);

  // Height and width swapped: the rows would be read as other pixels, so the job is refused.
  std::string swapped = kImageTraining;
  swapped.replace(swapped.find("[model]\n"), 8, "[model]\ninput_shape = [3, 5, 6]\n");
  const std::string job = dir.Write("swapped.toml",
                                    "[data]\nformat = \"npy\"\ntrain = \"nchw.npy\"\n"
                                    "train_labels = \"y.npy\"\n" +
                                        swapped);
  const ProcessResult refused =
      RunProcess({Bin(), "run", job, "--db", dir.Path("swapped.db")}, dir.Path(""));
  BOOST_TEST(refused.exit_code != 0);
  BOOST_TEST(refused.err.find("model.input_shape 3x5x6 does not match ") != std::string::npos,
             refused.err);
  BOOST_TEST(refused.err.find("nchw.npy [train split], images of 3x6x5 (channels x height x "
                              "width): set input_shape = [3, 6, 5]") != std::string::npos,
             refused.err);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace npy_run_test
}  // namespace dtrain::cli
