// NumPy input end to end through the real binary: arrays written by NumPy itself
// (tests/data/npy/write_blobs.py, Debian's python3-numpy) train to the same model, bit for bit,
// as the same numbers in CSV — from .npy files (float32 and float64), and from a .npz archive —
// with the features standardised and a validation split; the model predicts and evaluates those
// files as the CSV; a compressed .npz is refused saying why.
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "core/codec/file_bytes.h"
#include "run_checks.h"

namespace dtrain::cli {
namespace {

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

// Runs the job of [data] `data` in `dir` and exports its model; returns the model file's bytes.
std::string TrainAndExport(const TempDir& dir, const std::string& name, const std::string& data) {
  const std::string job =
      dir.Write(name + ".toml", "name = \"blobs\"\n[data]\n" + data + kTraining);
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

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace dtrain::cli
