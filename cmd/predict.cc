// dtrain predict / dtrain eval: run a model file over a data set (a job file's held-out data,
// or a file named with --data), printing predictions or loss and accuracy.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cmd/choices.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/terminal.h"
#include "config/job_file.h"
#include "core/codec/file_bytes.h"
#include "core/data/readers.h"
#include "core/sparse/sparse_inference.h"
#include "core/train/inference.h"
#include "daemon/runner/job_data.h"
#include "daemon/runner/sparse_data.h"

namespace dtrain::cli {
namespace {

struct InferenceArgs {
  std::string model;
  std::string job_file;
  std::vector<std::string> overrides;
  std::string data;
  std::string labels;
  std::string format;
  bool json = false;
  bool proba = false;         // predict: class probabilities instead of classes
  bool needs_labels = false;  // eval compares with labels; predict needs none
};

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The format a data file's name tells ("csv", "libsvm", "idx", "npy"), or "" when it tells none.
std::string_view FormatOfName(const std::string& path) {
  if (EndsWith(path, ".csv")) return "csv";
  if (EndsWith(path, ".npy") || EndsWith(path, ".npz")) return "npy";
  if (EndsWith(path, ".svm") || EndsWith(path, ".libsvm")) return "libsvm";
  if (path.find("ubyte") != std::string::npos || EndsWith(path, ".idx") || EndsWith(path, ".gz")) {
    return "idx";
  }
  return "";
}

// What the arguments lack to name the data: a data file where the job file goes, or nothing.
Status CheckDataNamed(const InferenceArgs& args) {
  if (args.data.empty() && args.job_file.empty()) {
    return Status::Error("name the data: --data PATH, or a job file whose held-out data to use");
  }
  if (!args.job_file.empty() && args.data.empty() && !FormatOfName(args.job_file).empty()) {
    return Status::Error(args.job_file + " is a data file, not a job file: name it with --data " +
                         args.job_file);
  }
  return Status::Ok();
}

// A CSV file's rows for `spec`: its last column the label, or, when it has exactly the model's
// features (and the labels are not needed), no label column at all.
Result<data::Dataset> ReadCsvInput(const InferenceArgs& args, const model::ModelSpec& spec) {
  const config::DataConfig defaults;
  data::CsvOptions csv;
  csv.header = defaults.header;
  csv.delimiter = defaults.delimiter;
  csv.classification = spec.loss != model::LossType::kMeanSquaredError;
  Result<std::vector<std::string>> first = data::ReadCsvFirstLine(args.data, csv.delimiter);
  if (!first.ok()) return first.status();
  if (first.value().size() == static_cast<std::size_t>(spec.inputs)) {
    if (args.needs_labels) {
      return Status::Error(args.data + " has " + std::to_string(spec.inputs) +
                           " columns, the model's features, and no label column to compare with");
    }
    csv.labels = false;
  }
  return data::ReadCsv(args.data, csv);
}

// The job file named by the arguments, loaded, or why not.
Result<config::JobConfig> LoadArgsJob(const InferenceArgs& args) {
  config::LoadResult loaded = config::LoadJobFile(args.job_file, args.overrides);
  if (!loaded.ok()) {
    std::string message = "invalid job file:";
    for (const config::Diagnostic& diag : loaded.diagnostics) {
      message += "\n  " + config::FormatDiagnostic(diag);
    }
    return Status::Error(message);
  }
  return *loaded.job;
}

// The data set named by the arguments: --data PATH, or the held-out data of a job file.
Result<data::Dataset> LoadInput(const InferenceArgs& args, const model::ModelSpec& spec) {
  const bool classification = spec.loss != model::LossType::kMeanSquaredError;
  if (!args.data.empty()) {
    const std::string format =
        args.format.empty() ? std::string(FormatOfName(args.data)) : args.format;
    if (format == "csv") return ReadCsvInput(args, spec);
    if (format == "npy") {  // a .npz's arrays x and y (as the job file's defaults)
      if (args.needs_labels && args.labels.empty() && !EndsWith(args.data, ".npz")) {
        return Status::Error(
            "eval of NumPy features needs their labels: --labels PATH (a .npy), "
            "or a .npz --data that holds them as its array y");
      }
      data::NpyOptions npy;
      npy.labels = args.needs_labels;
      npy.classification = classification;
      return data::ReadNpy(args.data, args.labels, npy);
    }
    config::DataConfig d;
    if (format == "libsvm") {
      d.format = config::DataFormat::kLibsvm;
      d.features = spec.inputs;
    } else {  // idx, also for a name that tells no format
      d.format = config::DataFormat::kIdx;
      if (args.labels.empty() && args.needs_labels) {
        return Status::Error("eval of IDX images needs their labels: --labels PATH");
      }
    }
    return runner::ReadJobDataset(d, args.data, args.labels, classification);
  }
  Result<config::JobConfig> job = LoadArgsJob(args);
  if (!job.ok()) return job.status();
  auto data = runner::LoadJobData(job.value());
  if (!data.ok()) return data.status();
  if (data.value().eval.rows == 0) {
    return Status::Error(args.job_file + " has no test or validation data to use");
  }
  return std::move(data.value().eval);
}

// A sparse model over the rows the arguments name: --data PATH (libsvm, its feature names hashed
// as in training), or a sparse job file's held-out rows.
Result<train::InferenceResult> InferSparse(const InferenceArgs& args,
                                           const sparse::SparseModelFile& model) {
  data::SparseRows rows;
  if (!args.data.empty()) {
    if (!args.format.empty() && args.format != "libsvm") {
      return Status::Error("a sparse model reads libsvm data; got --format " + args.format);
    }
    Result<data::SparseRows> read =
        data::ReadLibsvmSparse(args.data, {.features = 0, .hash_bits = model.hash_bits});
    if (!read.ok()) return read.status();
    rows = std::move(read).value();
  } else {
    Result<config::JobConfig> job = LoadArgsJob(args);
    if (!job.ok()) return job.status();
    if (!job.value().data.sparse) {
      return Status::Error(args.job_file + " is not a sparse job (data.sparse), but " + args.model +
                           " is a sparse model");
    }
    Result<runner::SparseJobData> data = runner::LoadSparseJobData(job.value());
    if (!data.ok()) return data.status();
    if (data.value().eval.rows() == 0) {
      return Status::Error(args.job_file + " has no test or validation data to use");
    }
    rows = std::move(data.value().eval);
  }
  return sparse::RunSparseInference(model, rows);
}

// A dense model file's bytes over the data the arguments name.
Result<train::InferenceResult> InferDense(const InferenceArgs& args, std::string_view bytes) {
  Result<train::ModelFile> model = train::DecodeModelFile(bytes);
  if (!model.ok()) return Status::Error(args.model + ": " + model.status().message());
  auto set = LoadInput(args, model.value().spec);
  if (!set.ok()) return set.status();
  return train::RunInference(model.value(), set.value());
}

// Loads the model and the data and runs the model; prints errors itself.
std::optional<train::InferenceResult> Infer(const InferenceArgs& args, int& code) {
  Result<std::string> bytes = codec::ReadFileBytes(args.model);
  Result<train::InferenceResult> result = bytes.status();
  if (Status named = CheckDataNamed(args); !named.ok()) {
    result = named;
  } else if (bytes.ok() && sparse::IsSparseModelFile(bytes.value())) {
    Result<sparse::SparseModelFile> model = sparse::DecodeSparseModelFile(bytes.value());
    result = model.ok() ? InferSparse(args, model.value())
                        : Status::Error(args.model + ": " + model.status().message());
  } else if (bytes.ok()) {
    result = InferDense(args, bytes.value());
  }
  if (!result.ok()) {
    PrintError(result.status().message());
    code = kExitUsage;
    return std::nullopt;
  }
  code = kExitOk;
  return std::move(result).value();
}

// {"predictions": [classes as integers, or values]}, and with --proba "probabilities": each
// row's list of class probabilities, or a one-output model's positive-class probability.
void PrintJson(const train::InferenceResult& result, bool proba) {
  nlohmann::json out = nlohmann::json::object();
  if (result.classification) {
    out["predictions"] = std::vector<int>(result.predictions.begin(), result.predictions.end());
  } else {
    out["predictions"] = result.predictions;
  }
  if (proba) {
    const auto columns = static_cast<long>(result.proba_columns);
    nlohmann::json rows = nlohmann::json::array();
    for (auto row = result.probabilities.begin(); row != result.probabilities.end();
         row += columns) {
      if (columns == 1) {
        rows.push_back(*row);
      } else {
        rows.push_back(std::vector<float>(row, row + columns));
      }
    }
    out["probabilities"] = std::move(rows);
  }
  std::cout << out.dump() << std::endl;
}

// A line per row: its class or value; with --proba its class probabilities, space-separated.
void PrintLines(const train::InferenceResult& result, bool proba) {
  std::string out;
  char cell[32];
  const auto columns = static_cast<std::size_t>(result.proba_columns);
  for (std::size_t r = 0; r < result.predictions.size(); ++r) {
    if (proba) {
      for (std::size_t c = 0; c < columns; ++c) {
        const int n = std::snprintf(cell, sizeof cell, c == 0 ? "%.6g" : " %.6g",
                                    result.probabilities[r * columns + c]);
        out.append(cell, static_cast<std::size_t>(n));
      }
      out += '\n';
      continue;
    }
    const float p = result.predictions[r];
    const int n = result.classification
                      ? std::snprintf(cell, sizeof cell, "%d\n", static_cast<int>(p))
                      : std::snprintf(cell, sizeof cell, "%.9g\n", p);
    out.append(cell, static_cast<std::size_t>(n));
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

int Predict(const InferenceArgs& args) {
  int code = kExitOk;
  auto result = Infer(args, code);
  if (!result) return code;
  if (args.proba && result->proba_columns == 0) {
    PrintError("--proba needs a classification model; " + args.model +
               " predicts values (regression)");
    return kExitUsage;
  }
  if (args.json) {
    PrintJson(*result, args.proba);
  } else {
    PrintLines(*result, args.proba);
  }
  return kExitOk;
}

int Eval(const InferenceArgs& args) {
  int code = kExitOk;
  auto result = Infer(args, code);
  if (!result) return code;
  const std::size_t rows = result->predictions.size();
  if (args.json) {
    nlohmann::json out = {{"loss", result->loss}, {"rows", rows}};
    if (result->classification) {
      out["accuracy"] = result->accuracy;
      if (std::isfinite(result->auc)) out["auc"] = result->auc;
    } else {
      out["mse"] = result->loss;
    }
    std::cout << out.dump() << std::endl;
  } else if (result->classification) {
    std::printf("rows %zu loss %.6f accuracy %.4f", rows, result->loss, result->accuracy);
    if (std::isfinite(result->auc)) std::printf(" auc %.4f", result->auc);
    std::printf("\n");
  } else {
    std::printf("rows %zu mse %.6f\n", rows, result->loss);
  }
  return kExitOk;
}

CLI::App* AddInferenceCommand(CLI::App& app, const char* name, const char* description,
                              const std::shared_ptr<InferenceArgs>& args) {
  CLI::App* cmd = app.add_subcommand(name, description);
  cmd->add_option("model", args->model, "The model file (.dtm) from dtrain export, dense or sparse")
      ->required();
  cmd->add_option("job_file", args->job_file, "A job file whose held-out data to use");
  cmd->add_option("--set", args->overrides, "Override a key of that job file")
      ->type_name("KEY=VALUE");
  cmd->add_option("--data", args->data, "A data file instead of a job file")->type_name("PATH");
  cmd->add_option("--labels", args->labels, "Labels file for --data in IDX or NumPy format (eval)")
      ->type_name("PATH");
  Choices(cmd->add_option("--format", args->format,
                          "Format of --data (default: from its name; else idx)"),
          {"idx", "csv", "libsvm", "npy"});
  cmd->add_flag("--json", args->json, "Print JSON");
  return cmd;
}

}  // namespace

void AddPredictAndEvalCommands(CLI::App& app, int& exit_code) {
  auto predict = std::make_shared<InferenceArgs>();
  CLI::App* predict_cmd = AddInferenceCommand(
      app, "predict", "Print a model's prediction for every row of a data set", predict);
  predict_cmd->add_flag("--proba", predict->proba,
                        "Print each row's class probabilities (one per class; a one-output "
                        "model's: the positive class's)");
  predict_cmd->callback([predict, &exit_code] { exit_code = Predict(*predict); });
  auto eval = std::make_shared<InferenceArgs>();
  eval->needs_labels = true;
  AddInferenceCommand(
      app, "eval",
      "Print a model's loss and accuracy (and a binary sparse model's AUC) on a data set", eval)
      ->callback([eval, &exit_code] { exit_code = Eval(*eval); });
}

}  // namespace dtrain::cli
