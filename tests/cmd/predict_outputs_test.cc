// dtrain predict's output formats and dtrain eval --per-class through the real binary, on a model
// briefly trained on Fashion-MNIST: the classes and probabilities as .npy, CSV and JSON agree
// with each other, every row's probabilities sum to 1, and the per-class report agrees with
// scikit-learn's on the same predictions and labels (tests/cmd/predict_outputs_check.py, NumPy
// and scikit-learn from Debian) and is the one the run kept of its final evaluation. Also what is
// refused: .npy to a terminal, --json with another
// --format, --per-class of a regression model.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/idx_files.h"
#include "common/process.h"
#include "common/temp_dir.h"
#include "run_checks.h"

namespace dtrain::cli {
namespace predict_outputs_test {

using namespace run_checks;
using dtrain::testing::FashionMnistPresent;
using dtrain::testing::kFashionDir;
using dtrain::testing::ProcessResult;
using dtrain::testing::RunProcess;
using dtrain::testing::TempDir;

// Softmax regression on Fashion-MNIST, 100 steps: about 75% test accuracy, every class
// predicted some of the time and mistaken for others.
const std::string kFashionJob = R"(name = "fashion-quick"
[data]
format = "idx"
train = ")" + kFashionDir + R"(/train-images-idx3-ubyte.gz"
train_labels = ")" + kFashionDir +
                                R"(/train-labels-idx1-ubyte.gz"
test = ")" + kFashionDir + R"(/t10k-images-idx3-ubyte.gz"
test_labels = ")" + kFashionDir +
                                R"(/t10k-labels-idx1-ubyte.gz"
[model]
type = "softmax"
[train]
steps = 100
batch_size = 128
seed = 1
[optimizer]
type = "sgd"
lr = 0.1
)";

std::string SourceDir() {
  const char* dir = std::getenv("DTRAIN_SOURCE_DIR");
  BOOST_REQUIRE_MESSAGE(dir != nullptr, "DTRAIN_SOURCE_DIR is not set (run through ctest)");
  return dir;
}

// Runs `job_text` in `dir` and exports its model to model.dtm; returns the job file's path.
std::string TrainAndExport(const TempDir& dir, const std::string& job_text) {
  const std::string job = dir.Write("job.toml", job_text);
  const std::string db = dir.Path("runs.db");
  const ProcessResult run = RunProcess({Bin(), "run", job, "--db", db}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(run.exit_code == 0, run.err);
  const ProcessResult exported =
      RunProcess({Bin(), "export", "1", "--db", db, "-o", dir.Path("model.dtm")}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(exported.exit_code == 0, exported.err);
  return job;
}

// Runs dtrain with `args` in `dir`; requires it to succeed.
ProcessResult Succeed(const TempDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), Bin());
  const ProcessResult r = RunProcess(args, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, args[1] + ": " + r.err);
  return r;
}

BOOST_AUTO_TEST_SUITE(predict_outputs)

BOOST_AUTO_TEST_CASE(formats_agree_and_the_report_matches_scikit_learn,
                     *boost::unit_test::precondition(FashionMnistPresent)) {
  TempDir dir;
  const std::string job = TrainAndExport(dir, kFashionJob);
  const std::string model = dir.Path("model.dtm");
  // -o writes the file; standard output (json by its shorthand) the same bytes.
  for (const char* format : {"npy", "csv", "json"}) {
    Succeed(dir, {"predict", model, job, "--format", format, "-o",
                  dir.Path(std::string("classes.") + format)});
    Succeed(dir, {"predict", model, job, "--proba", "--format", format, "-o",
                  dir.Path(std::string("proba.") + format)});
  }
  const ProcessResult shorthand = Succeed(dir, {"predict", model, job, "--json"});
  BOOST_TEST(shorthand.out == dtrain::testing::ReadFile(dir.Path("classes.json")));
  const ProcessResult report = Succeed(dir, {"eval", model, job, "--per-class", "--json"});
  dir.Write("eval.json", report.out);
  const ProcessResult checked =
      RunProcess({"/usr/bin/python3", SourceDir() + "/tests/cmd/predict_outputs_check.py",
                  dir.Path(""), kFashionDir + "/t10k-labels-idx1-ubyte.gz"},
                 dir.Path(""));
  BOOST_TEST(checked.exit_code == 0, "predict_outputs_check.py: " + checked.err);
  // The run kept the same report of its final evaluation with the job (dtrain status --json).
  const nlohmann::json status = ParseJson(
      Succeed(dir, {"status", "1", "--db", dir.Path("runs.db"), "--json"}))["class_report"];
  const nlohmann::json evaluated = nlohmann::json::parse(report.out);
  BOOST_TEST(status["step"] == 100);
  for (const char* field : {"classes", "confusion", "per_class", "macro", "micro"}) {
    BOOST_TEST(status[field] == evaluated[field], field);
  }

  // The human report: the accuracy line, the matrix and the table of scores.
  const ProcessResult text = Succeed(dir, {"eval", model, job, "--per-class"});
  for (const char* part :
       {"rows 10000 loss", "confusion matrix\n  TRUE\\PREDICTED", "per class\n",
        "  CLASS  PRECISION  RECALL      F1  SUPPORT\n", "  macro ", "  micro "}) {
    BOOST_TEST(text.out.find(part) != std::string::npos, part);
  }

  // Binary .npy is not written to a terminal (script(1) gives the command one).
  const ProcessResult tty =
      RunProcess({"/usr/bin/script", "-qec",
                  Bin() + " predict " + model + " " + job + " --format npy", "/dev/null"},
                 dir.Path(""));
  BOOST_TEST(tty.exit_code == 2);
  BOOST_TEST(
      tty.out.find("--format npy writes binary: name a file with -o PATH") != std::string::npos,
      tty.out);
  const ProcessResult both =
      RunProcess({Bin(), "predict", model, job, "--json", "--format", "csv"}, dir.Path(""));
  BOOST_TEST(both.exit_code == 2);
  BOOST_TEST(
      both.err.find("--json is --format json; it cannot go with --format csv") != std::string::npos,
      both.err);
}

// A regression model has no classes: --per-class is refused saying so; predict writes its
// values under the CSV header "value".
BOOST_AUTO_TEST_CASE(regression_has_no_per_class_report) {
  TempDir dir;
  const std::string job = TrainAndExport(dir, R"(name = "linear"
[data]
format = "synthetic"
synthetic = "linear"
rows = 200
test_rows = 50
features = 4
[model]
type = "linear"
[train]
steps = 20
batch_size = 20
[optimizer]
type = "sgd"
lr = 0.02
)");
  const std::string model = dir.Path("model.dtm");
  const ProcessResult refused =
      RunProcess({Bin(), "eval", model, job, "--per-class"}, dir.Path(""));
  BOOST_TEST(refused.exit_code == 2);
  BOOST_TEST(refused.err.find("--per-class needs a classification model; " + model +
                              " predicts values (regression)") != std::string::npos,
             refused.err);
  const ProcessResult csv = Succeed(dir, {"predict", model, job, "--format", "csv"});
  BOOST_TEST(csv.out.rfind("value\n", 0) == 0u, csv.out.substr(0, 40));
  BOOST_TEST(std::count(csv.out.begin(), csv.out.end(), '\n') == 51);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace predict_outputs_test
}  // namespace dtrain::cli
