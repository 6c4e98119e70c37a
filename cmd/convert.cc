// dtrain convert: a model file (.dtm, dense or sparse) as ONNX, without a job or a daemon.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/model_output.h"
#include "cmd/terminal.h"
#include "core/codec/file_bytes.h"

namespace dtrain::cli {
namespace {

struct ConvertArgs {
  std::string model;
  std::string output;
  bool json = false;
};

void SayConverted(const ConvertArgs& args, std::int64_t step, const std::string& spec) {
  if (args.json) {
    std::cout << nlohmann::json{{"model", spec},
                                {"step", step},
                                {"format", "onnx"},
                                {"source", args.model},
                                {"path", args.output}}
                     .dump()
              << std::endl;
  } else {
    std::cout << "wrote " << args.output << " (" << args.model << ", step " << step << ", ONNX)\n";
  }
}

// A file that is not a model file is bad input (kExitUsage); a model ONNX cannot hold, or a
// failed write, is a failure (kExitFailed).
int Convert(const ConvertArgs& args) {
  Result<std::string> bytes = codec::ReadFileBytes(args.model);
  if (!bytes.ok()) {
    PrintError(bytes.status().message());
    return kExitUsage;
  }
  const auto written = [&](const Status& status, std::int64_t step, const std::string& spec) {
    if (!status.ok()) {
      PrintError(args.model + " cannot be converted to ONNX: " + status.message());
      return kExitFailed;
    }
    SayConverted(args, step, spec);
    return kExitOk;
  };
  if (sparse::IsSparseModelFile(bytes.value())) {
    Result<sparse::SparseModelFile> model = sparse::DecodeSparseModelFile(bytes.value());
    if (!model.ok()) {
      PrintError(args.model + ": " + model.status().message());
      return kExitUsage;
    }
    return written(WriteModelAs(args.output, "onnx", model.value()), model.value().step,
                   sparse::FormatSparseModelSpec(model.value().spec));
  }
  Result<train::ModelFile> model = train::DecodeModelFile(bytes.value());
  if (!model.ok()) {
    PrintError(args.model + ": " + model.status().message());
    return kExitUsage;
  }
  return written(WriteModelAs(args.output, "onnx", model.value()), model.value().step,
                 model::FormatModelSpec(model.value().spec));
}

}  // namespace

void AddConvertCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ConvertArgs>();
  CLI::App* cmd = app.add_subcommand("convert", "Write a model file (.dtm) as an ONNX model");
  cmd->add_option("model", args->model, "The model file (.dtm) from dtrain export, dense or sparse")
      ->required();
  cmd->add_option("-o,--output", args->output, "The ONNX file to write")
      ->type_name("PATH")
      ->required();
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args, &exit_code] { exit_code = Convert(*args); });
}

}  // namespace dtrain::cli
