// dtrain validate: check a job file and print it fully resolved, or every problem in it; then
// the model's layers with their output shapes and parameter counts and, when the job compresses
// its gradients, the plan of each tensor (as TOML comments); or all that matters to a program as
// one JSON object (--json).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/compression_view.h"
#include "cmd/data_checks.h"
#include "cmd/exit_codes.h"
#include "cmd/text_table.h"
#include "config/job_file.h"
#include "config/thread_layout.h"
#include "core/math/gemm.h"
#include "core/model/model.h"
#include "core/model/onednn_paths.h"
#include "core/net/host_info.h"
#include "daemon/runner/job_precision.h"
#include "daemon/runner/sparse_data.h"
#include "daemon/server/slurm_commands.h"

namespace dtrain::cli {
namespace {

struct ValidateArgs {
  std::string job_file;
  std::vector<std::string> overrides;
  bool all_keys = false;
  bool json = false;
};

config::ResolvedKeys Keys(const ValidateArgs& args) {
  return args.all_keys ? config::ResolvedKeys::kAll : config::ResolvedKeys::kApplicable;
}

// Each layer of the model (resolved against the data) with what it gives a sample and its
// parameters, as comments that keep the output a valid job file.
void PrintLayers(const model::ModelSpec& spec) {
  const model::Model model(spec);
  const std::vector<model::LayerSpec> layers = model::ModelLayers(spec);
  TextTable table({"LAYER", "TYPE", "OUTPUT", "PARAMETERS"}, {true, false, false, true});
  table.AddRow({{""}, {"input"}, {model::FormatShape(model::ModelInputShape(spec))}, {""}});
  for (std::size_t i = 0; i < model.NumLayers(); ++i) {
    table.AddRow({{std::to_string(i + 1)},
                  {model::LayerTypeName(layers[i])},
                  {model::FormatShape(model.layer(i).output())},
                  {std::to_string(model.layer(i).NumParams())}});
  }
  std::cout << "\n# model: " << model.NumParams()
            << " parameters, shapes channels x height x width\n";
  table.Print(std::cout, /*color=*/false, "#   ");
}

// How each replica uses its cores on this host (every replica here unless the job names hosts).
// A job placed by Slurm: what each attempt asks Slurm for.
void PrintSlurmRequest(const config::JobConfig& job) {
  if (job.cluster.scheduler != config::Scheduler::kSlurm) return;
  const std::string name = "dtrain-NODE-JOB";
  std::cout << "# Slurm: each attempt is";
  for (const std::string& a :
       server::SallocArguments(job, name, server::FirstAllocationTasks(job))) {
    std::cout << ' ' << a;
  }
  std::cout << ", then one srun step per process";
  if (job.cluster.Elastic()) {
    std::cout << "; each further replica, up to " << job.cluster.MostMembers() << ", is";
    for (const std::string& a : server::SallocArguments(job, name, 1)) std::cout << ' ' << a;
  }
  std::cout << "\n";
}

config::ThreadLayout LayoutHere(const config::JobConfig& job, const model::Model& model) {
  const int hosts = std::max(1, static_cast<int>(job.cluster.hosts.size()));
  const int here = (job.cluster.Trainers() + hosts - 1) / hosts;
  return config::ChooseThreadLayout(job, model, here, net::OnlineCores());
}

void PrintThreads(const config::JobConfig& job, const model::ModelSpec& spec) {
  const config::ThreadLayout t = LayoutHere(job, model::Model(spec));
  std::cout << "# threads of each replica on this host: " << t.Describe() << " (" << t.reason
            << ")\n";
}

// The matrix products' precision, set here as each process of the job sets it, so that
// PrintConvPaths times that precision's kernels; then what runs them (math::DescribeGemm).
void PrintPrecision(const config::JobConfig& job) {
  const Result<std::string> line = runner::UsePrecision(job);
  if (!line.ok()) {
    std::cout << "# " << line.status().message() << "\n";
  } else {
    std::cout << "# " << (line.value().empty() ? "precision: fp32" : line.value()) << "\n";
  }
  std::cout << "# " << math::DescribeGemm() << "\n";
}

// What each conv2d layer shape runs on: timed here, on this CPU with the job's threads and batch,
// as each replica times it at its start (model::ChooseLayerPaths).
void PrintConvPaths(const config::JobConfig& job, const model::ModelSpec& spec) {
  const model::Model model(spec);
  const config::ThreadLayout t = LayoutHere(job, model);
  math::SetBlasThreads(t.BlasThreads());
  for (const std::string& line : model::ChooseLayerPaths(model, t.PassRows(job.train.batch_size))) {
    std::cout << "# " << line << "\n";
  }
}

// A sparse job: what its files hold, read as the job will read them.
void PrintSparse(const config::JobConfig& job, const runner::SparseJobData& d) {
  std::cout << "\n# model: " << sparse::FormatSparseModelSpec(d.spec) << " on " << d.TrainRows()
            << " rows of " << d.train.features << " features, ";
  if (d.stream) {
    std::cout << "streamed in " << d.stream->blocks.size() << " blocks\n";
  } else {
    std::cout << d.train.NonZeros() << " non-zeros\n";
  }
  PrintSlurmRequest(job);
}

int Validate(const ValidateArgs& args) {
  // The model must fit this host (dtrain submit leaves that to the daemon it submits to).
  config::LoadResult loaded = config::LoadJobFile(
      args.job_file, args.overrides, {config::DataFiles::kCheck, net::PhysicalMemory(), true});
  if (!loaded.ok()) {
    PrintDiagnostics(loaded.diagnostics, args.job_file);
    return kExitUsage;
  }
  const CliResult<CheckedData> data = CheckJobData(*loaded.job);
  if (!data.ok()) return Report(data.error());
  const std::string resolved = config::FormatResolvedJob(*loaded.job, Keys(args));
  const std::optional<model::ModelSpec>& spec = data.value().spec;
  if (args.json) {
    const nlohmann::json out = {
        {"resolved", resolved},
        {"compression", spec ? CompressionPlanJson(*loaded.job, *spec) : nlohmann::json()}};
    std::cout << out.dump() << std::endl;
    return kExitOk;
  }
  std::cout << resolved;
  if (data.value().sparse) {
    PrintSparse(*loaded.job, *data.value().sparse);
    return kExitOk;
  }
  PrintLayers(*spec);
  PrintCompressionPlan(*loaded.job, *spec, std::cout);
  PrintThreads(*loaded.job, *spec);
  PrintPrecision(*loaded.job);
  PrintConvPaths(*loaded.job, *spec);
  PrintSlurmRequest(*loaded.job);
  return kExitOk;
}

}  // namespace

void AddValidateCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Check a job file; print it fully resolved (defaults filled in) or its errors");
  cmd->add_option("job_file", args->job_file, "The job file (job.toml)")->required();
  cmd->add_option("--set", args->overrides, "Override a job-file key: --set train.epochs=1")
      ->type_name("KEY=VALUE");
  cmd->add_flag("--all-keys", args->all_keys,
                "Print every key, also those that do not apply to this job");
  cmd->add_flag("--json", args->json,
                "Print one JSON object: the resolved job file and its compression plan");
  cmd->callback([args, &exit_code] { exit_code = Validate(*args); });
}

}  // namespace dtrain::cli
