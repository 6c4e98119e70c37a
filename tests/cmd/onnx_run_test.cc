// ONNX export end to end, through the real binary and a real ONNX runtime: each example model
// (the MLP, a CNN with batchnorm, average pooling and dropout, softmax, logistic, linear
// regression, sparse logistic and factorization machine, and a model-parallel job's) trained
// briefly by `dtrain run`, exported with `dtrain export --format onnx`, checked by onnx's own
// checker (full check, strict shape inference: tests/onnx/check_onnx.py), run by onnxruntime-node
// on the job's held-out rows (tests/onnx/run_onnx.js) and compared with `dtrain predict` on the
// same rows: probabilities and values within 1e-5, identical classes. And what export and convert
// refuse. onnxruntime-node comes from scripts/install-test-npm (DTRAIN_NODE_MODULES); without it
// these tests fail.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "cmd/run_checks.h"
#include "common/process.h"
#include "common/temp_dir.h"
#include "config/job_file.h"
#include "core/data/click_synthetic.h"
#include "core/model/spec.h"
#include "daemon/runner/job_data.h"
#include "daemon/runner/sparse_data.h"

namespace dtrain::cli {
namespace onnx_run_test {

using namespace run_checks;
using dtrain::testing::ProcessResult;
using dtrain::testing::RunProcess;
using dtrain::testing::TempDir;

std::string SourceDir() {
  const char* dir = std::getenv("DTRAIN_SOURCE_DIR");
  BOOST_REQUIRE_MESSAGE(dir != nullptr, "DTRAIN_SOURCE_DIR is not set (run through ctest)");
  return dir;
}

std::string NodeModules() {
  const char* dir = std::getenv("DTRAIN_NODE_MODULES");
  BOOST_REQUIRE_MESSAGE(dir != nullptr, "DTRAIN_NODE_MODULES is not set (run through ctest)");
  BOOST_REQUIRE_MESSAGE(std::filesystem::exists(std::string(dir) + "/onnxruntime-node"),
                        "onnxruntime-node is not in " << dir << ": run scripts/install-test-npm");
  return dir;
}

// A job to train: its file and the --set overrides that keep it to a few seconds.
struct Job {
  std::string name, file;
  std::vector<std::string> sets;
};

std::vector<std::string> WithSets(std::vector<std::string> argv, const Job& job) {
  for (const std::string& s : job.sets) argv.insert(argv.end(), {"--set", s});
  return argv;
}

std::string Db(const TempDir& dir, const Job& job) { return dir.Path(job.name + ".db"); }

// Trains the job and exports its final checkpoint as `<name>.dtm` and `<name>.onnx`.
void TrainAndExport(const TempDir& dir, const Job& job) {
  const ProcessResult run = RunProcess(
      WithSets({Bin(), "run", job.file, "--db", Db(dir, job), "--json"}, job), dir.Path(""));
  BOOST_REQUIRE_MESSAGE(run.exit_code == 0, job.name << ": " << run.err);
  for (const std::string format : {"dtm", "onnx"}) {
    const ProcessResult exported =
        RunProcess({Bin(), "export", "1", "--db", Db(dir, job), "--format", format, "-o",
                    dir.Path(job.name + "." + format), "--json"},
                   dir.Path(""));
    BOOST_REQUIRE_MESSAGE(exported.exit_code == 0, job.name << ": " << exported.err);
    BOOST_TEST(ParseJson(exported)["format"].get<std::string>() == format);
  }
}

config::JobConfig LoadJob(const Job& job) {
  config::LoadResult loaded = config::LoadJobFile(job.file, job.sets);
  std::string problems;
  for (const config::Diagnostic& d : loaded.diagnostics) problems += config::FormatDiagnostic(d);
  BOOST_REQUIRE_MESSAGE(loaded.ok(), problems);
  return *loaded.job;
}

// The held-out rows `dtrain predict` reads for the job, unscaled (the ONNX model scales them
// itself), in the ONNX input's layout: an image's values channel-first.
struct Rows {
  std::vector<float> x;
  std::vector<std::int64_t> dims;  // of one sample
};

Rows DenseRows(const Job& job) {
  const config::JobConfig loaded = LoadJob(job);
  Result<runner::JobData> data = runner::LoadJobData(loaded);
  BOOST_REQUIRE_MESSAGE(data.ok(), data.status().message());
  const data::Dataset& eval = data.value().eval;
  std::vector<std::uint32_t> all(eval.rows);
  std::iota(all.begin(), all.end(), 0u);
  std::vector<float> x(eval.rows * eval.features), y(eval.rows);
  data::GatherBatch(eval, data::ConstantScaling(1.0f), all, x.data(), y.data());
  const model::Shape s = model::ModelInputShape(data.value().spec);
  if (s.Flat()) return {std::move(x), {static_cast<std::int64_t>(eval.features)}};
  Rows rows{std::vector<float>(x.size()), {s.channels, s.height, s.width}};
  for (std::size_t r = 0; r < eval.rows; ++r) {
    const float* from = x.data() + r * s.Size();
    float* to = rows.x.data() + r * s.Size();
    for (int h = 0; h < s.height; ++h) {
      for (int w = 0; w < s.width; ++w) {
        for (int c = 0; c < s.channels; ++c) {
          to[(c * s.height + h) * s.width + w] = from[(h * s.width + w) * s.channels + c];
        }
      }
    }
  }
  return rows;
}

// A sparse job's held-out rows as dense vectors over its features.
Rows SparseRows(const Job& job) {
  const config::JobConfig loaded = LoadJob(job);
  Result<runner::SparseJobData> data = runner::LoadSparseJobData(loaded);
  BOOST_REQUIRE_MESSAGE(data.ok(), data.status().message());
  const data::Dataset dense = data::Densify(data.value().eval);
  return {std::vector<float>(dense.floats.begin(), dense.floats.end()),
          {static_cast<std::int64_t>(dense.features)}};
}

// onnx's checker on the exported file: IR 7, opset 13, the input [N, sample dims], the outputs.
void CheckOnnx(const std::string& path, const Rows& rows, const std::vector<std::string>& outputs) {
  const ProcessResult checked =
      RunProcess({"/usr/bin/python3", SourceDir() + "/tests/onnx/check_onnx.py", path}, "/");
  BOOST_REQUIRE_MESSAGE(checked.exit_code == 0, checked.err);
  const nlohmann::json info = ParseJson(checked);
  BOOST_TEST(info["ir_version"].get<int>() == 7);
  BOOST_TEST(info["opset"] == nlohmann::json::array({13}));
  BOOST_REQUIRE(info["inputs"].size() == 1u);
  BOOST_TEST(info["inputs"][0]["name"].get<std::string>() == "input");
  BOOST_TEST(info["inputs"][0]["type"].get<std::string>() == "FLOAT");
  nlohmann::json dims = nlohmann::json::array({"N"});
  for (std::int64_t d : rows.dims) dims.push_back(d);
  BOOST_TEST(info["inputs"][0]["dims"] == dims, info["inputs"][0]["dims"].dump());
  std::vector<std::string> names;
  for (const nlohmann::json& o : info["outputs"]) names.push_back(o["name"].get<std::string>());
  BOOST_TEST(names == outputs, boost::test_tools::per_element());
}

// onnxruntime-node's outputs of the model on the rows.
nlohmann::json RunOnnx(const TempDir& dir, const std::string& model, const Rows& rows) {
  const std::string features = dir.Path("rows.f32");
  {
    std::ofstream out(features, std::ios::binary);
    out.write(reinterpret_cast<const char*>(rows.x.data()),
              static_cast<std::streamsize>(rows.x.size() * sizeof(float)));
  }
  std::string dims;
  for (std::int64_t d : rows.dims) {
    if (!dims.empty()) dims += ',';
    dims += std::to_string(d);
  }
  const ProcessResult ran =
      RunProcess({"/usr/bin/env", "NODE_PATH=" + NodeModules(), "node",
                  SourceDir() + "/tests/onnx/run_onnx.js", model, features, dims},
                 dir.Path(""));
  BOOST_REQUIRE_MESSAGE(ran.exit_code == 0, ran.err);
  return ParseJson(ran);
}

nlohmann::json Predict(const TempDir& dir, const Job& job, bool proba) {
  std::vector<std::string> argv{Bin(), "predict", dir.Path(job.name + ".dtm"), job.file, "--json"};
  if (proba) argv.push_back("--proba");
  const ProcessResult predicted = RunProcess(WithSets(argv, job), dir.Path(""));
  BOOST_REQUIRE_MESSAGE(predicted.exit_code == 0, predicted.err);
  return ParseJson(predicted);
}

double MaxDifference(const std::vector<float>& a, const std::vector<float>& b) {
  BOOST_REQUIRE(a.size() == b.size());
  double most = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    most = std::max(most, std::abs(static_cast<double>(a[i]) - b[i]));
  }
  return most;
}

// dtrain predict's probabilities, row after row (a one-output model's one per row).
std::vector<float> Flat(const nlohmann::json& rows) {
  std::vector<float> out;
  for (const nlohmann::json& row : rows) {
    if (row.is_array()) {
      for (const nlohmann::json& p : row) out.push_back(p.get<float>());
    } else {
      out.push_back(row.get<float>());
    }
  }
  return out;
}

// The job trained, exported, checked, and its ONNX outputs on the held-out rows against dtrain
// predict's: a classifier's probabilities [N, columns] and classes, a regression's values.
void RequireSameAsPredict(const TempDir& dir, const Job& job, const Rows& rows, int columns) {
  BOOST_TEST_CONTEXT(job.name) {
    TrainAndExport(dir, job);
    const std::string model = dir.Path(job.name + ".onnx");
    const std::size_t n = rows.x.size() / static_cast<std::size_t>(std::accumulate(
                                              rows.dims.begin(), rows.dims.end(), std::int64_t{1},
                                              std::multiplies<>()));
    BOOST_TEST_REQUIRE(n > 100u);
    const nlohmann::json plain = Predict(dir, job, false);
    if (columns == 0) {
      CheckOnnx(model, rows, {"value"});
      const nlohmann::json onnx = RunOnnx(dir, model, rows);
      BOOST_TEST(onnx["value"]["dims"] == nlohmann::json::array({n, 1}));
      const auto values = plain["predictions"].get<std::vector<float>>();
      BOOST_TEST(MaxDifference(onnx["value"]["data"].get<std::vector<float>>(), values) <= 1e-5);
      return;
    }
    CheckOnnx(model, rows, {"probabilities", "class"});
    const nlohmann::json onnx = RunOnnx(dir, model, rows);
    const nlohmann::json proba = Predict(dir, job, true);
    BOOST_TEST(onnx["probabilities"]["dims"] == nlohmann::json::array({n, columns}));
    BOOST_TEST(MaxDifference(onnx["probabilities"]["data"].get<std::vector<float>>(),
                             Flat(proba["probabilities"])) <= 1e-5);
    const auto classes = onnx["class"]["data"].get<std::vector<long>>();
    const auto predicted = plain["predictions"].get<std::vector<long>>();
    BOOST_TEST_REQUIRE(classes.size() == predicted.size());
    // The same class on every row, but for a tie within the probabilities' tolerance, which two
    // implementations' roundings may break either way.
    const std::vector<float> p = Flat(proba["probabilities"]);
    const auto at = [&](std::size_t row, long c) {
      return columns == 1 ? (c == 1 ? p[row] : 1.0f - p[row])
                          : p[row * static_cast<std::size_t>(columns) + static_cast<std::size_t>(c)];
    };
    for (std::size_t row = 0; row < classes.size(); ++row) {
      if (classes[row] == predicted[row]) continue;
      BOOST_TEST_INFO("row " << row);
      BOOST_TEST(std::abs(at(row, classes[row]) - at(row, predicted[row])) <= 1e-5);
    }
    if (columns > 1) {  // a trained classifier, not one class for every row
      BOOST_TEST(std::set<long>(classes.begin(), classes.end()).size() > 1u);
    }
  }
}

std::string Example(const std::string& name) { return SourceDir() + "/examples/" + name; }

constexpr const char* kFashion = "/usr/share/datasets/fashion-mnist/";

// A CNN with every layer type: channels above 1 after the first conv2d, batchnorm with running
// statistics, both poolings, an activation layer, flatten, dropout; standardized inputs.
std::string CnnJob() {
  return std::string(R"(name = "cnn"
[data]
format = "idx"
train = ")") +
         kFashion + R"(train-images-idx3-ubyte.gz"
train_labels = ")" +
         kFashion + R"(train-labels-idx1-ubyte.gz"
test = ")" +
         kFashion + R"(t10k-images-idx3-ubyte.gz"
test_labels = ")" +
         kFashion + R"(t10k-labels-idx1-ubyte.gz"
scale = "standardize"
[model]
type = "sequential"
input_shape = [1, 28, 28]
[[model.layers]]
type = "conv2d"
filters = 4
kernel = 3
padding = "same"
activation = "relu"
[[model.layers]]
type = "batchnorm"
[[model.layers]]
type = "avgpool2d"
size = 2
[[model.layers]]
type = "conv2d"
filters = 6
kernel = 3
stride = 2
activation = "tanh"
[[model.layers]]
type = "maxpool2d"
size = 2
[[model.layers]]
type = "flatten"
[[model.layers]]
type = "dropout"
rate = 0.3
[[model.layers]]
type = "dense"
units = 16
[[model.layers]]
type = "sigmoid"
[[model.layers]]
type = "dense"
[train]
steps = 60
epochs = 1
batch_size = 32
seed = 4
[optimizer]
type = "adam"
lr = 0.01
)";
}

// Two classes of Gaussian blobs, standardized, for a logistic model (one output, P(1)).
constexpr const char* kLogisticJob = R"(name = "logistic"
[data]
format = "synthetic"
synthetic = "blobs"
rows = 2000
test_rows = 500
features = 6
classes = 2
noise = 3.0
scale = "standardize"
[model]
type = "logistic"
[train]
epochs = 2
batch_size = 32
seed = 3
[optimizer]
type = "sgd"
lr = 0.1
)";

// Click rows over 300 features as libsvm files in `dir`, and a sparse job of `type` on them.
std::string SparseJob(const TempDir& dir, const std::string& type, int hash_bits) {
  const data::ClickData clicks =
      data::MakeClicks({.rows = 3000, .features = 300, .nonzeros = 12, .seed = 9});
  std::vector<std::uint32_t> train(2500), test(500);
  std::iota(train.begin(), train.end(), 0u);
  std::iota(test.begin(), test.end(), 2500u);
  BOOST_REQUIRE(
      data::WriteLibsvm(data::SelectRows(clicks.rows, train), dir.Path("train.svm")).ok());
  BOOST_REQUIRE(data::WriteLibsvm(data::SelectRows(clicks.rows, test), dir.Path("test.svm")).ok());
  // Without hashing the features are the file's indices, data.features of them.
  const std::string space =
      hash_bits > 0 ? "hash_bits = " + std::to_string(hash_bits) : std::string("features = 300");
  return dir.Write(type + std::to_string(hash_bits) + ".toml", R"(name = "clicks"
[data]
format = "libsvm"
sparse = true
train = "train.svm"
test = "test.svm"
)" + space + R"(
[model]
type = ")" + type + "\"\n" + (type == "fm" ? "factors = 3\n" : "") +
                                                                   R"([train]
epochs = 2
batch_size = 50
seed = 2
[optimizer]
type = "adagrad"
lr = 0.2
)");
}

BOOST_AUTO_TEST_SUITE(onnx_run)

BOOST_AUTO_TEST_CASE(the_mlp_example_runs_the_same_in_onnxruntime) {
  TempDir dir;
  const Job job{"mlp", Example("fashion-mnist-mlp.toml"), {"train.steps=150"}};
  RequireSameAsPredict(dir, job, DenseRows(job), 10);
}

// Its checkpoints hold the whole model, joined from the partitions: it exports like any other.
BOOST_AUTO_TEST_CASE(a_model_parallel_job_exports_its_whole_model) {
  TempDir dir;
  const Job job{"parallel", Example("fashion-mnist-model-parallel.toml"), {"train.steps=150"}};
  RequireSameAsPredict(dir, job, DenseRows(job), 10);
}

BOOST_AUTO_TEST_CASE(a_cnn_with_batchnorm_and_dropout_runs_the_same_and_converts_alike) {
  TempDir dir;
  const Job job{"cnn", dir.Write("cnn.toml", CnnJob()), {}};
  RequireSameAsPredict(dir, job, DenseRows(job), 10);
  // dtrain convert of the .dtm writes the very file export wrote.
  const ProcessResult converted = RunProcess(
      {Bin(), "convert", dir.Path("cnn.dtm"), "-o", dir.Path("converted.onnx"), "--json"},
      dir.Path(""));
  BOOST_REQUIRE_MESSAGE(converted.exit_code == 0, converted.err);
  BOOST_TEST(ParseJson(converted)["path"].get<std::string>() == dir.Path("converted.onnx"));
  std::ifstream a(dir.Path("cnn.onnx"), std::ios::binary),
      b(dir.Path("converted.onnx"), std::ios::binary);
  const std::string exported{std::istreambuf_iterator<char>(a), {}};
  const std::string again{std::istreambuf_iterator<char>(b), {}};
  BOOST_TEST((exported == again));
}

BOOST_AUTO_TEST_CASE(the_softmax_example_runs_the_same_in_onnxruntime) {
  TempDir dir;
  const Job job{"softmax", Example("fashion-mnist-softmax.toml"), {"train.steps=100"}};
  RequireSameAsPredict(dir, job, DenseRows(job), 10);
}

BOOST_AUTO_TEST_CASE(a_logistic_model_gives_the_probability_of_class_1) {
  TempDir dir;
  const Job job{"logistic", dir.Write("logistic.toml", kLogisticJob), {}};
  RequireSameAsPredict(dir, job, DenseRows(job), 1);
}

BOOST_AUTO_TEST_CASE(the_linear_regression_example_gives_the_same_values) {
  TempDir dir;
  const Job job{"linear", Example("linear-regression.toml"), {"train.epochs=2"}};
  RequireSameAsPredict(dir, job, DenseRows(job), 0);
}

BOOST_AUTO_TEST_CASE(sparse_logistic_and_fm_models_run_the_same_over_their_features) {
  TempDir dir;
  for (const std::string type : {"logistic", "fm"}) {
    const Job job{type, SparseJob(dir, type, 0), {}};
    RequireSameAsPredict(dir, job, SparseRows(job), 1);
  }
}

BOOST_AUTO_TEST_CASE(a_sparse_model_over_too_many_hashed_features_is_refused) {
  TempDir dir;
  const Job job{"hashed", SparseJob(dir, "logistic", 24), {}};
  const ProcessResult run =
      RunProcess({Bin(), "run", job.file, "--db", Db(dir, job), "--json"}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(run.exit_code == 0, run.err);
  const ProcessResult exported = RunProcess({Bin(), "export", "1", "--db", Db(dir, job), "--format",
                                             "onnx", "-o", dir.Path("hashed.onnx")},
                                            dir.Path(""));
  BOOST_TEST(exported.exit_code == 1);
  BOOST_TEST(exported.err.find("job 1: a sparse model exports as a dense ONNX model over its "
                               "whole index space, and data.hash_bits = 24 gives 16777216 "
                               "hashed features, more than 1048576 (2^20)") != std::string::npos,
             exported.err);
  BOOST_TEST(!std::filesystem::exists(dir.Path("hashed.onnx")));
  // The same model as a .dtm: convert refuses it for the same reason, naming the file.
  const ProcessResult dtm = RunProcess(
      {Bin(), "export", "1", "--db", Db(dir, job), "-o", dir.Path("hashed.dtm")}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(dtm.exit_code == 0, dtm.err);
  const ProcessResult converted = RunProcess(
      {Bin(), "convert", dir.Path("hashed.dtm"), "-o", dir.Path("hashed.onnx")}, dir.Path(""));
  BOOST_TEST(converted.exit_code == 1);
  BOOST_TEST(converted.err.find(dir.Path("hashed.dtm") + " cannot be converted to ONNX: a sparse "
                                                         "model exports") != std::string::npos,
             converted.err);
}

BOOST_AUTO_TEST_CASE(convert_refuses_a_file_that_is_not_a_model_naming_it) {
  TempDir dir;
  const std::string junk = dir.Write("junk.dtm", "DTRMODEL but nothing a model file holds");
  const std::string truncated = dir.Write("short.dtm", "DTR");
  for (const std::string& path : {junk, truncated, dir.Path("missing.dtm")}) {
    const ProcessResult r =
        RunProcess({Bin(), "convert", path, "-o", dir.Path("out.onnx")}, dir.Path(""));
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(r.err.find(path) != std::string::npos, r.err);
    BOOST_TEST(!std::filesystem::exists(dir.Path("out.onnx")));
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace onnx_run_test
}  // namespace dtrain::cli
