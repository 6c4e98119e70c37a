// dtrain export: write a job's checkpoint (or, with --best, its best model) as a self-describing
// model file (.dtm) or as ONNX (--format onnx), taking it from the daemon or from a store file
// (--db).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cmd/as_job_owner.h"
#include "cmd/choices.h"
#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/daemon_client.h"
#include "cmd/exit_codes.h"
#include "cmd/json_fields.h"
#include "cmd/model_output.h"
#include "cmd/stored_job.h"
#include "cmd/terminal.h"
#include "core/sparse/sparse_model_file.h"
#include "core/train/model_file.h"
#include "daemon/runner/job_data.h"
#include "daemon/runner/sparse_checkpoint.h"

namespace dtrain::cli {
namespace {

struct ExportArgs {
  std::int64_t job = 0;
  std::int64_t step = -1;  // -1: the newest checkpoint
  bool best = false;       // the job's best model instead of a checkpoint
  std::string output;
  std::string format = "dtm";
  std::string db;  // empty: ask the daemon
  bool json = false;
};

// What a model file is made of: the job (its name and data scaling) and one checkpoint, and
// whose rights the job's data is read with.
struct ExportSource {
  config::JobConfig job;
  store::CheckpointData checkpoint;
  std::int64_t owner_uid = 0, owner_gid = -1;
};

std::string JobName(std::int64_t job) { return "job " + std::to_string(job); }

CliResult<store::CheckpointData> StoredCheckpoint(store::Store& store, const ExportArgs& args) {
  if (args.best) {
    auto kept = store.LoadBestModel(args.job);
    if (!kept.ok()) return ErrorFrom(kept.status());
    if (!kept.value()) {
      return CliError{kExitNotFound, JobName(args.job) + " has no best model", "not_found", {}};
    }
    return std::move(*kept.value());
  }
  if (args.step >= 0) {
    auto infos = store.Checkpoints(args.job);
    if (!infos.ok()) return ErrorFrom(infos.status());
    if (std::none_of(infos.value().begin(), infos.value().end(),
                     [&](const store::CheckpointInfo& c) { return c.step == args.step; })) {
      return CliError{kExitNotFound,
                      JobName(args.job) + " has no checkpoint at step " + std::to_string(args.step),
                      "not_found",
                      {}};
    }
    auto loaded = store.LoadCheckpoint(args.job, args.step);
    if (!loaded.ok()) return ErrorFrom(loaded.status());
    return std::move(loaded).value();
  }
  auto latest = store.LatestCheckpoint(args.job);
  if (!latest.ok()) return ErrorFrom(latest.status());
  for (const std::string& skipped : latest.value().skipped) PrintError("skipped " + skipped);
  if (!latest.value().checkpoint) {
    return CliError{kExitFailed, JobName(args.job) + " has no checkpoint to export", "", {}};
  }
  return std::move(*latest.value().checkpoint);
}

CliResult<ExportSource> FromStore(const ExportArgs& args) {
  CliResult<std::unique_ptr<store::Store>> store = OpenExistingStore(args.db);
  if (!store.ok()) return store.error();
  CliResult<store::JobRecord> record = StoredJob(*store.value(), args.job, args.db);
  if (!record.ok()) return record.error();
  CliResult<config::JobConfig> job = StoredJobConfig(*store.value(), args.job, args.db);
  if (!job.ok()) return job.error();
  CliResult<store::CheckpointData> checkpoint = StoredCheckpoint(*store.value(), args);
  if (!checkpoint.ok()) return checkpoint.error();
  return ExportSource{std::move(job).value(), std::move(checkpoint).value(),
                      record.value().owner_uid, record.value().owner_gid};
}

CliResult<ExportSource> FromDaemon(const ExportArgs& args, const GlobalOptions& globals) {
  CliResult<DaemonClient> client = DaemonClient::Connect(globals);
  if (!client.ok()) return client.error();
  nlohmann::json request = {{"type", "checkpoint"}, {"id", args.job}};
  if (args.step >= 0) request["step"] = args.step;
  if (args.best) request["best"] = true;
  CliResult<nlohmann::json> reply = client.value().Request(std::move(request));
  if (!reply.ok()) return reply.error();
  CliResult<std::string> blob = client.value().ReadCheckpointBlob();
  if (!blob.ok()) return blob.error();
  const std::string which = JobName(args.job) + (args.best ? "'s best model" : "'s checkpoint") +
                            " at step " + std::to_string(JsonInt(reply.value(), "step"));
  auto checkpoint = store::DecodeCheckpoint(blob.value());
  if (!checkpoint.ok()) {
    return CliError{kExitFailed, which + ": " + checkpoint.status().message(), "", {}};
  }
  CliResult<config::JobConfig> job =
      ParseRecordedJob(JsonString(reply.value(), "spec_toml"), args.job);
  if (!job.ok()) return job.error();
  return ExportSource{std::move(job).value(), std::move(checkpoint).value(),
                      JsonInt(reply.value(), "owner", -1), JsonInt(reply.value(), "owner_gid", -1)};
}

// The standardize statistics fitted on the job's training rows, read with its owner's rights
// (as_job_owner.h): a data path re-pointed at a file only the caller may read fails there.
Result<data::Scaling> OwnersScaling(const ExportSource& source) {
  Result<std::string> bytes = AsJobOwner(source.owner_uid, source.owner_gid, [&source] {
    Result<runner::JobData> data = runner::LoadJobData(source.job);
    if (!data.ok()) return Result<std::string>(data.status());
    const data::Scaling& s = data.value().scaling;
    std::string out(sizeof(float) * (s.mean.size() + s.inv_std.size()), '\0');
    std::memcpy(out.data(), s.mean.data(), sizeof(float) * s.mean.size());
    std::memcpy(out.data() + sizeof(float) * s.mean.size(), s.inv_std.data(),
                sizeof(float) * s.inv_std.size());
    return Result<std::string>(std::move(out));
  });
  if (!bytes.ok()) return bytes.status();
  const std::size_t features = bytes.value().size() / (2 * sizeof(float));
  data::Scaling scaling;
  scaling.kind = data::Scaling::Kind::kStandardize;
  scaling.mean.resize(features);
  scaling.inv_std.resize(features);
  std::memcpy(scaling.mean.data(), bytes.value().data(), sizeof(float) * features);
  std::memcpy(scaling.inv_std.data(), bytes.value().data() + sizeof(float) * features,
              sizeof(float) * features);
  return scaling;
}

// Prints what was written, as the user asked (--json or text).
void SayWritten(const ExportArgs& args, std::int64_t step, const std::string& model,
                const std::string& what) {
  if (args.json) {
    std::cout << nlohmann::json{{"job", args.job},
                                {"step", step},
                                {"model", model},
                                {"format", args.format},
                                {"path", args.output}}
                     .dump()
              << std::endl;
  } else {
    std::cout << "wrote " << args.output << " (job " << args.job << ", step " << step << ", "
              << what << (args.format == "onnx" ? ", ONNX" : "") << ")\n";
  }
}

// A sparse job's checkpoint as a sparse model file: the touched keys' slots, without the
// optimizer's state.
int WriteSparseModel(const ExportArgs& args, const ExportSource& source) {
  const store::CheckpointData& checkpoint = source.checkpoint;
  const std::string at = "checkpoint at step " + std::to_string(checkpoint.step) + ": ";
  Result<sparse::SparseModelSpec> spec = sparse::ParseSparseModelSpec(checkpoint.model_spec);
  if (!spec.ok() || checkpoint.optimizer_state.empty()) {
    PrintError(at + (spec.ok() ? "holds no keys" : spec.status().message()));
    return kExitFailed;
  }
  Result<sparse::KeyTableState> state =
      runner::SparseStateOf(checkpoint, spec.value(), checkpoint.optimizer_state.size() - 1);
  if (!state.ok()) {
    PrintError(at + state.status().message());
    return kExitFailed;
  }
  sparse::SparseModelFile file{.spec = spec.value(),
                               .hash_bits = source.job.data.hash_bits,
                               .features = static_cast<std::uint64_t>(source.job.data.features),
                               .step = checkpoint.step,
                               .job_name = source.job.name,
                               .keys = std::move(state.value().keys),
                               .slots = std::move(state.value().slots),
                               .globals = std::move(state.value().globals)};
  if (Status written = WriteModelAs(args.output, args.format, file); !written.ok()) {
    PrintError(JobName(args.job) + ": " + written.message());
    return kExitFailed;
  }
  SayWritten(args, file.step, checkpoint.model_spec,
             std::to_string(file.keys.size()) + " keys of a sparse model");
  return kExitOk;
}

int WriteModel(const ExportArgs& args, ExportSource source) {
  if (source.job.data.sparse) return WriteSparseModel(args, source);
  store::CheckpointData& checkpoint = source.checkpoint;
  const config::JobConfig& job = source.job;
  auto spec = model::ParseModelSpec(checkpoint.model_spec);
  if (!spec.ok()) {
    PrintError("checkpoint at step " + std::to_string(checkpoint.step) + ": " +
               spec.status().message());
    return kExitFailed;
  }
  train::ModelFile file;
  file.spec = spec.value();
  file.step = checkpoint.step;
  file.job_name = job.name;
  file.params = std::move(checkpoint.params);
  if (job.data.standardize) {
    // The statistics are a pure function of the training data: recompute them, as its owner.
    Result<data::Scaling> scaling = OwnersScaling(source);
    if (!scaling.ok()) {
      PrintError("cannot recompute the feature scaling: " + scaling.status().message());
      return kExitFailed;
    }
    file.scaling = std::move(scaling).value();
  } else {
    file.scaling = data::ConstantScaling(job.data.scale);
  }
  Status written = WriteModelAs(args.output, args.format, file);
  if (!written.ok()) {
    PrintError(JobName(args.job) + ": " + written.message());
    return kExitFailed;
  }
  SayWritten(args, file.step, model::FormatModelSpec(file.spec),
             std::to_string(file.params.size()) + " parameters");
  return kExitOk;
}

int Export(const ExportArgs& args, const GlobalOptions& globals) {
  CliResult<ExportSource> source = args.db.empty() ? FromDaemon(args, globals) : FromStore(args);
  if (!source.ok()) return Report(source.error());
  return WriteModel(args, std::move(source).value());
}

}  // namespace

void AddExportCommand(CLI::App& app, Globals globals, int& exit_code) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd =
      app.add_subcommand("export", "Write a job's checkpoint as a model file (.dtm or ONNX)");
  cmd->add_option("job", args->job, "The job id")->required();
  Choices(cmd->add_option("--format", args->format,
                          "Write a dtrain model file (dtm, the default) or an ONNX model (onnx)"),
          ModelFormats());
  cmd->add_option("-o,--output", args->output, "The model file to write")
      ->type_name("PATH")
      ->required();
  CLI::Option* step =
      cmd->add_option("--step", args->step, "Export the checkpoint of this step (default: newest)")
          ->type_name("N");
  cmd->add_flag("--best", args->best,
                "Export the job's best model (checkpoint.keep_best, train.early_stopping)")
      ->excludes(step);
  cmd->add_option("--db", args->db, "Read this store file instead of asking the daemon")
      ->type_name("PATH");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args, globals, &exit_code] { exit_code = Export(*args, *globals); });
}

}  // namespace dtrain::cli
