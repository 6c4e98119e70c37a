// dtrain export: write a job's checkpoint as a self-describing model file (.dtm).
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/stored_job.h"
#include "cmd/terminal.h"
#include "core/train/model_file.h"
#include "daemon/runner/job_data.h"

namespace dtrain::cli {
namespace {

struct ExportArgs {
  std::int64_t job = 0;
  std::int64_t step = -1;  // -1: the newest checkpoint
  std::string output;
  std::string db = kDefaultDb;
  bool json = false;
};

int Export(const ExportArgs& args) {
  std::unique_ptr<store::Store> store = OpenStoreOrReport(args.db);
  if (!store) return kExitFailed;
  auto job = StoredJobConfig(*store, args.job);
  if (!job.ok()) {
    PrintError(job.status().message());
    return kExitFailed;
  }
  store::CheckpointData checkpoint;
  if (args.step >= 0) {
    auto loaded = store->LoadCheckpoint(args.job, args.step);
    if (!loaded.ok()) {
      PrintError(loaded.status().message());
      return kExitFailed;
    }
    checkpoint = std::move(loaded).value();
  } else {
    auto latest = store->LatestCheckpoint(args.job);
    if (!latest.ok()) {
      PrintError(latest.status().message());
      return kExitFailed;
    }
    for (const std::string& skipped : latest.value().skipped) PrintError("skipped " + skipped);
    if (!latest.value().checkpoint) {
      PrintError("job " + std::to_string(args.job) + " has no checkpoint to export");
      return kExitFailed;
    }
    checkpoint = std::move(*latest.value().checkpoint);
  }

  train::ModelFile file;
  auto spec = model::ParseModelSpec(checkpoint.model_spec);
  if (!spec.ok()) {
    PrintError("checkpoint at step " + std::to_string(checkpoint.step) + ": " +
               spec.status().message());
    return kExitFailed;
  }
  file.spec = spec.value();
  file.step = checkpoint.step;
  file.job_name = job.value().name;
  file.params = std::move(checkpoint.params);
  if (job.value().data.standardize) {
    // The statistics are a pure function of the training data: recompute them.
    auto data = runner::LoadJobData(job.value());
    if (!data.ok()) {
      PrintError("cannot recompute the feature scaling: " + data.status().message());
      return kExitFailed;
    }
    file.scaling = data.value().scaling;
  } else {
    file.scaling = data::ConstantScaling(job.value().data.scale);
  }
  Status written = train::WriteModelFile(args.output, file);
  if (!written.ok()) {
    PrintError(written.message());
    return kExitFailed;
  }
  if (args.json) {
    std::cout << nlohmann::json{{"job", args.job},
                                {"step", file.step},
                                {"model", model::FormatModelSpec(file.spec)},
                                {"path", args.output}}
                     .dump()
              << std::endl;
  } else {
    std::cout << "wrote " << args.output << " (job " << args.job << ", step " << file.step
              << ", " << file.params.size() << " parameters)\n";
  }
  return kExitOk;
}

}  // namespace

void AddExportCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand("export", "Write a job's checkpoint as a model file (.dtm)");
  cmd->add_option("job", args->job, "The job id")->required();
  cmd->add_option("-o,--output", args->output, "The model file to write")
      ->type_name("PATH")
      ->required();
  cmd->add_option("--step", args->step, "Export the checkpoint of this step (default: newest)")
      ->type_name("N");
  cmd->add_option("--db", args->db, "The store file")->type_name("PATH")->capture_default_str();
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args, &exit_code] { exit_code = Export(*args); });
}

}  // namespace dtrain::cli
