// dtrain predict / dtrain eval: run a model file over a data set (a job file's held-out data,
// or a file named with --data), writing predictions (plain lines, CSV, JSON or .npy) or printing
// loss and accuracy, and with --per-class the confusion matrix and per-class scores.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cmd/choices.h"
#include "cmd/class_report_view.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/terminal.h"
#include "config/job_file.h"
#include "core/codec/file_bytes.h"
#include "core/data/npy_header.h"
#include "core/data/readers.h"
#include "core/sparse/sparse_inference.h"
#include "core/train/class_report.h"
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
  std::string data_format;  // of --data: idx, csv, libsvm, npy, or "" (from its name)
  std::string format;       // predict's output: csv, json, npy, or "" (plain lines)
  std::string output;       // predict: the file to write, or "" (standard output)
  bool json = false;
  bool proba = false;         // predict: class probabilities instead of classes
  bool per_class = false;     // eval: the confusion matrix and per-class scores
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
        args.data_format.empty() ? std::string(FormatOfName(args.data)) : args.data_format;
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
    if (!args.data_format.empty() && args.data_format != "libsvm") {
      return Status::Error("a sparse model reads libsvm data; got --data-format " +
                           args.data_format);
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

// The rows of probabilities, `columns` a row, as JSON: each row's list, or for one column its
// value alone.
nlohmann::json ProbabilityRows(const train::InferenceResult& result) {
  const auto columns = static_cast<long>(result.proba_columns);
  nlohmann::json rows = nlohmann::json::array();
  for (auto row = result.probabilities.begin(); row != result.probabilities.end(); row += columns) {
    if (columns == 1) {
      rows.push_back(*row);
    } else {
      rows.push_back(std::vector<float>(row, row + columns));
    }
  }
  return rows;
}

// {"predictions": [classes as integers, or values]}, and with --proba "probabilities": each
// row's list of class probabilities, or a one-output model's positive-class probability.
std::string JsonText(const train::InferenceResult& result, bool proba) {
  nlohmann::json out = nlohmann::json::object();
  if (result.classification) {
    out["predictions"] = std::vector<int>(result.predictions.begin(), result.predictions.end());
  } else {
    out["predictions"] = result.predictions;
  }
  if (proba) out["probabilities"] = ProbabilityRows(result);
  return out.dump() + "\n";
}

// A line per row: its class or value, or with --proba its class probabilities, `separator`
// between them, each written by `float_format` (CSV: "%.9g", which gives back every float32).
std::string LinesText(const train::InferenceResult& result, bool proba, char separator,
                      const char* float_format) {
  std::string out;
  char cell[32];
  const auto columns = static_cast<std::size_t>(result.proba_columns);
  for (std::size_t r = 0; r < result.predictions.size(); ++r) {
    if (proba) {
      for (std::size_t c = 0; c < columns; ++c) {
        if (c > 0) out += separator;
        const int n =
            std::snprintf(cell, sizeof cell, float_format, result.probabilities[r * columns + c]);
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
  return out;
}

// CSV: the header "class" or "value", with --proba "p0,p1,..." (one per class) or "p1" (a
// one-output model's positive class), then a row per sample.
std::string CsvText(const train::InferenceResult& result, bool proba) {
  std::string header;
  if (!proba) {
    header = result.classification ? "class" : "value";
  } else if (result.proba_columns == 1) {
    header = "p1";
  } else {
    for (int c = 0; c < result.proba_columns; ++c) {
      header += (c == 0 ? "p" : ",p") + std::to_string(c);
    }
  }
  return header + "\n" + LinesText(result, proba, ',', "%.9g");
}

// A .npy (version 1.0) of int64 classes [N], float32 values [N], or with --proba float32
// probabilities [N, C] ([N] for one output).
std::string NpyFile(const train::InferenceResult& result, bool proba) {
  const std::uint64_t rows = result.predictions.size();
  std::string out;
  if (proba) {
    const auto columns = static_cast<std::uint64_t>(result.proba_columns);
    std::vector<std::uint64_t> shape{rows};
    if (columns > 1) shape.push_back(columns);
    out = data::NpyHeaderBytes({data::NpyKind::kFloat, 4}, shape);
    out.append(reinterpret_cast<const char*>(result.probabilities.data()),
               result.probabilities.size() * sizeof(float));
  } else if (result.classification) {
    out = data::NpyHeaderBytes({data::NpyKind::kSigned, 8}, std::vector<std::uint64_t>{rows});
    for (float p : result.predictions) {
      const auto c = static_cast<std::int64_t>(p);
      out.append(reinterpret_cast<const char*>(&c), sizeof c);
    }
  } else {
    out = data::NpyHeaderBytes({data::NpyKind::kFloat, 4}, std::vector<std::uint64_t>{rows});
    out.append(reinterpret_cast<const char*>(result.predictions.data()),
               result.predictions.size() * sizeof(float));
  }
  return out;
}

// The output format predict's arguments ask for ("" plain lines), or why they conflict.
Result<std::string> OutputFormat(const InferenceArgs& args) {
  if (!args.json) return args.format;
  if (!args.format.empty() && args.format != "json") {
    return Status::Error("--json is --format json; it cannot go with --format " + args.format);
  }
  return std::string("json");
}

int Predict(const InferenceArgs& args) {
  const Result<std::string> format = OutputFormat(args);
  if (!format.ok()) {
    PrintError(format.status().message());
    return kExitUsage;
  }
  if (format.value() == "npy" && args.output.empty() && StdoutIsTty()) {
    PrintError("--format npy writes binary: name a file with -o PATH, or redirect standard output");
    return kExitUsage;
  }
  int code = kExitOk;
  auto result = Infer(args, code);
  if (!result) return code;
  if (args.proba && result->proba_columns == 0) {
    PrintError("--proba needs a classification model; " + args.model +
               " predicts values (regression)");
    return kExitUsage;
  }
  const std::string out = format.value() == "json"  ? JsonText(*result, args.proba)
                          : format.value() == "csv" ? CsvText(*result, args.proba)
                          : format.value() == "npy" ? NpyFile(*result, args.proba)
                                                    : LinesText(*result, args.proba, ' ', "%.6g");
  if (!args.output.empty()) {
    if (Status written = codec::WriteFileAtomically(args.output, out); !written.ok()) {
      PrintError(written.message());
      return kExitFailed;
    }
    return kExitOk;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

// Eval's per-class report of a classification result, or why there is none.
Result<train::ClassReport> PerClass(const InferenceArgs& args,
                                    const train::InferenceResult& result) {
  if (!result.classification) {
    return Status::Error("--per-class needs a classification model; " + args.model +
                         " predicts values (regression), which have no classes to count");
  }
  return train::ClassReportOf(result.labels, result.predictions,
                              result.proba_columns == 1 ? 2 : result.proba_columns);
}

int Eval(const InferenceArgs& args) {
  int code = kExitOk;
  auto result = Infer(args, code);
  if (!result) return code;
  std::optional<train::ClassReport> report;
  if (args.per_class) {
    Result<train::ClassReport> made = PerClass(args, *result);
    if (!made.ok()) {
      PrintError(made.status().message());
      return kExitUsage;
    }
    report = std::move(made).value();
  }
  const std::size_t rows = result->predictions.size();
  if (args.json) {
    nlohmann::json out = {{"loss", result->loss}, {"rows", rows}};
    if (result->classification) {
      out["accuracy"] = result->accuracy;
      if (std::isfinite(result->auc)) out["auc"] = result->auc;
    } else {
      out["mse"] = result->loss;
    }
    if (report) out.update(nlohmann::json::parse(train::ClassReportJson(*report)));
    std::cout << out.dump() << std::endl;
  } else if (result->classification) {
    std::printf("rows %zu loss %.6f accuracy %.4f", rows, result->loss, result->accuracy);
    if (std::isfinite(result->auc)) std::printf(" auc %.4f", result->auc);
    std::printf("\n");
  } else {
    std::printf("rows %zu mse %.6f\n", rows, result->loss);
  }
  if (report && !args.json) {
    std::fflush(stdout);
    PrintClassReport(std::cout, *report);
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
  Choices(cmd->add_option("--data-format", args->data_format,
                          "Format of --data (default: from its name; else idx)"),
          {"idx", "csv", "libsvm", "npy"});
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
  Choices(predict_cmd->add_option("--format", predict->format,
                                  "Output format (default: one plain line per row)"),
          {"csv", "json", "npy"});
  predict_cmd->add_flag("--json", predict->json, "Print JSON (--format json)");
  predict_cmd->add_option("-o,--output", predict->output, "Write to PATH instead of stdout")
      ->type_name("PATH");
  predict_cmd->callback([predict, &exit_code] { exit_code = Predict(*predict); });
  auto eval = std::make_shared<InferenceArgs>();
  eval->needs_labels = true;
  CLI::App* eval_cmd = AddInferenceCommand(
      app, "eval",
      "Print a model's loss and accuracy (and a binary sparse model's AUC) on a data set", eval);
  eval_cmd->add_flag("--per-class", eval->per_class,
                     "Also print the confusion matrix and each class's precision, recall, F1");
  eval_cmd->add_flag("--json", eval->json, "Print JSON");
  eval_cmd->callback([eval, &exit_code] { exit_code = Eval(*eval); });
}

}  // namespace dtrain::cli
