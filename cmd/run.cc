// dtrain run: train a job in the foreground, recording into a local store file.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/data_checks.h"
#include "cmd/exit_codes.h"
#include "cmd/interrupt.h"
#include "cmd/progress.h"
#include "cmd/stored_job.h"
#include "cmd/terminal.h"
#include "config/job_file.h"
#include "config/job_layout.h"
#include "config/resume_settings.h"
#include "config/tags_key.h"
#include "core/net/host_info.h"
#include "daemon/runner/local_run.h"
#include "daemon/server/embedded_coordinator.h"
#include "daemon/store/metric_value.h"

namespace dtrain::cli {
namespace {

struct RunArgs {
  std::string job_file;
  std::vector<std::string> overrides;
  std::vector<std::string> tags;  // --tag, added to the job file's
  std::string db = kDefaultDb;
  bool json = false;
  std::string resume;  // job id, or "" with resume_flag: the newest matching job
  bool resume_flag = false;
};

// How the user goes on with a stopped run: the store named unless it is the default one.
std::string ResumeCommand(const RunArgs& args, std::int64_t job_id) {
  std::string command = "dtrain run --resume " + std::to_string(job_id);
  if (args.db != kDefaultDb) command += " --db " + args.db;
  return command;
}

// Makes a previously interrupted/crashed job runnable again; refuses one that is finished or
// still being run by a live process.
Status PrepareResume(store::Store& store, std::int64_t job_id) {
  auto record = store.GetJob(job_id);
  if (!record.ok()) return record.status();
  const store::JobState state = record.value().state;
  if (state == store::JobState::kSucceeded) {
    return Status::Error("job " + std::to_string(job_id) + " already succeeded");
  }
  if (Status gone = RecordGoneWorkers(store, job_id); !gone.ok()) return gone;
  if (store::IsTerminal(state)) {
    return store.SetJobState(job_id, store::JobState::kQueued, "resumed by the user");
  }
  return Status::Ok();
}

// The newest unfinished job in the store whose resolved job file equals `resolved`.
Result<std::int64_t> FindResumableJob(store::Store& store, const std::string& resolved) {
  auto jobs = store.ListJobs();
  if (!jobs.ok()) return jobs.status();
  for (auto it = jobs.value().rbegin(); it != jobs.value().rend(); ++it) {
    if (it->spec_toml == resolved && it->state != store::JobState::kSucceeded) return it->id;
  }
  return Status::Error(
      "no unfinished job with this job file in the store; start it without --resume");
}

void PrintSummary(const RunArgs& args, const config::JobConfig& job, std::int64_t job_id,
                  const runner::RunOutcome& outcome, store::Store& store) {
  if (args.json) {
    nlohmann::json metrics = nlohmann::json::object();
    if (outcome.final_eval) {
      metrics["loss"] = store::MetricValueJson(outcome.final_eval->loss);
      metrics[outcome.classification ? "accuracy" : "mse"] = store::MetricValueJson(
          outcome.classification ? outcome.final_eval->accuracy : outcome.final_eval->loss);
      if (std::isfinite(outcome.final_eval->auc)) metrics["auc"] = outcome.final_eval->auc;
    }
    nlohmann::json out = {{"job", job_id},
                          {"name", job.name},
                          {"state", store::JobStateName(outcome.state)},
                          {"reason", outcome.reason},
                          {"steps", outcome.steps},
                          {"seconds", outcome.seconds},
                          {"metrics", metrics},
                          {"eval_set", outcome.eval_name},
                          {"db", args.db}};
    if (outcome.resumed_from >= 0) out["resumed_from"] = outcome.resumed_from;
    std::cout << out.dump() << std::endl;
    return;
  }
  // The time first: after the reason it read as the time a suggested resume would take.
  std::printf("job %lld (%s) %s after %.1f s: %s\n", static_cast<long long>(job_id),
              job.name.c_str(), std::string(store::JobStateName(outcome.state)).c_str(),
              outcome.seconds, outcome.reason.c_str());
  if (outcome.final_eval) {
    if (outcome.classification) {
      std::printf("  %s accuracy %.4f  loss %.4f", outcome.eval_name.c_str(),
                  outcome.final_eval->accuracy, outcome.final_eval->loss);
      if (std::isfinite(outcome.final_eval->auc))
        std::printf("  auc %.4f", outcome.final_eval->auc);
      std::printf("\n");
    } else {
      std::printf("  %s mse %.6f\n", outcome.eval_name.c_str(), outcome.final_eval->loss);
    }
  }
  std::printf("  store: %s (metrics: dtrain metrics %lld --db %s)\n", args.db.c_str(),
              static_cast<long long>(job_id), args.db.c_str());
  // A job that failed before its first checkpoint has no model to export.
  const auto checkpoints = store.Checkpoints(job_id);
  if (checkpoints.ok() && !checkpoints.value().empty()) {
    std::printf("  model: checkpoint in the store; dtrain export %lld --db %s -o %s.dtm\n",
                static_cast<long long>(job_id), args.db.c_str(), job.name.c_str());
  } else {
    std::printf("  model: none (no checkpoint was taken)\n");
  }
}

// The final evaluation of a job whose workers ran in other processes: the last eval points of
// the replica that evaluated furthest (rank 0 in sync modes, where replicas agree; in async the
// one that reached the target, or trained longest).
void FillFinalEval(store::Store& store, std::int64_t job_id, const config::JobConfig& job,
                   runner::RunOutcome* outcome) {
  outcome->classification = job.model.loss != model::LossType::kMeanSquaredError;
  outcome->eval_name = !job.data.test.empty() || job.data.format == config::DataFormat::kSynthetic
                           ? "test"
                       : job.data.validation_fraction > 0 ? "validation"
                                                          : "";
  auto rows = store.Metrics(job_id, "");
  if (!rows.ok()) return;
  struct LastEval {
    std::int64_t step = -1;
    std::int64_t steps = 0;
    std::optional<double> loss, accuracy, auc;
  };
  std::map<int, LastEval> replicas;
  for (const store::MetricRow& m : rows.value()) {
    if (config::RoleOf(job.cluster, m.worker).kind == config::ProcessRole::Kind::kShard) {
      continue;  // a shard's statistics
    }
    LastEval& r = replicas[m.worker];
    r.steps = std::max(r.steps, m.step);
    if (m.name == "eval_loss" || m.name == "eval_mse") r.loss = m.value, r.step = m.step;
    if (m.name == "eval_accuracy") r.accuracy = m.value;
    if (m.name == "eval_auc") r.auc = m.value;
  }
  const LastEval* best = nullptr;
  for (const auto& [rank, r] : replicas) {
    if (best == nullptr || r.step > best->step) best = &r;
  }
  if (best == nullptr) return;
  outcome->steps = std::max(outcome->steps, best->steps);
  if (best->loss) {
    outcome->final_eval = train::EvalResult{*best->loss, best->accuracy.value_or(0.0), 0};
    if (best->auc) outcome->final_eval->auc = *best->auc;
  }
}

// A job of several processes: they run as worker processes of this binary (`dtrain worker`),
// coordinated from here as dtraind would; the lead process's output (rank 0's, or a Sandblaster
// job's coordinator's) is shown as it comes, and every process's errors.
int RunWithWorkers(const RunArgs& args, const config::JobConfig& job, std::int64_t job_id,
                   store::Store& store) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    PrintError("cannot find this program to start the workers: " + ec.message());
    return kExitFailed;
  }
  InstallStopHandlers();
  const auto start = std::chrono::steady_clock::now();
  server::EmbeddedOptions options;
  options.worker_exe = self.string();
  options.stop = StopFlag();
  const int lead = config::LeadRank(job.cluster);
  options.on_line = [json = args.json, lead](int rank, std::string_view stream,
                                             std::string_view line) {
    if (json || (rank != lead && stream == "stdout")) return;
    std::fprintf(stream == "stdout" ? stdout : stderr, "r%d: %.*s\n", rank,  // as dtrain logs
                 static_cast<int>(line.size()), line.data());
  };
  Result<store::JobState> ended = server::RunJobWithWorkers(job_id, store, options);
  if (!ended.ok()) {
    PrintError("job " + std::to_string(job_id) + ": " + ended.status().message());
    return kExitFailed;
  }
  runner::RunOutcome outcome;
  outcome.state = ended.value();
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (auto record = store.GetJob(job_id); record.ok()) outcome.reason = record.value().reason;
  if (outcome.state == store::JobState::kCancelled) {
    outcome.reason += "; resume with " + ResumeCommand(args, job_id);
  }
  FillFinalEval(store, job_id, job, &outcome);
  PrintSummary(args, job, job_id, outcome, store);
  return outcome.state == store::JobState::kSucceeded   ? kExitOk
         : outcome.state == store::JobState::kCancelled ? kExitInterrupted
                                                        : kExitFailed;
}

int Run(const RunArgs& args) {
  const bool resume = args.resume_flag || !args.resume.empty();
  if (args.job_file.empty() && args.resume.empty()) {
    PrintError("run needs a job file, or --resume JOB");
    return kExitUsage;
  }
  if (!args.resume.empty() && !args.tags.empty()) {
    PrintError("--tag tags a new job: job " + args.resume + " keeps the tags it was started with");
    return kExitUsage;
  }
  // Resuming needs the store that holds the job: a mistyped --db must not create an empty one.
  CliResult<std::unique_ptr<store::Store>> opened =
      resume ? OpenExistingStore(args.db) : OpenStore(args.db);
  if (!opened.ok()) return Report(opened.error());
  store::Store* store = opened.value().get();

  config::JobConfig job;
  std::int64_t job_id = 0;
  if (!args.resume.empty()) {
    char* end = nullptr;
    job_id = std::strtoll(args.resume.c_str(), &end, 10);
    if (end == args.resume.c_str() || *end != '\0' || job_id <= 0) {
      PrintError("--resume takes a job id, got '" + args.resume + "'");
      return kExitUsage;
    }
    CliResult<store::JobRecord> record = StoredJob(*store, job_id, args.db);
    if (!record.ok()) return Report(record.error());
    // --set changes what may change on resume, and refuses anything else.
    config::LoadResult settled = config::ApplyResumeSettings(
        record.value().spec_toml, "job " + std::to_string(job_id), args.overrides);
    if (!settled.ok()) {
      PrintDiagnostics(settled.diagnostics, "job " + std::to_string(job_id));
      return kExitUsage;
    }
    job = std::move(*settled.job);
  } else {
    config::LoadResult loaded = config::LoadJobFile(
        args.job_file, args.overrides, {config::DataFiles::kCheck, net::PhysicalMemory(), true});
    if (!loaded.ok()) {
      PrintDiagnostics(loaded.diagnostics, args.job_file);
      return kExitUsage;
    }
    job = *loaded.job;
    if (std::vector<config::Diagnostic> tags = config::AddTags(args.tags, &job.tags);
        !tags.empty()) {
      PrintDiagnostics(tags, args.job_file);
      return kExitUsage;
    }
    if (job.cluster.scheduler == config::Scheduler::kSlurm) {
      PrintError(args.job_file + ": cluster.scheduler = \"slurm\": Slurm places the processes of a "
                 "job that dtraind coordinates; submit it with `dtrain submit " + args.job_file +
                 "` (or --set cluster.scheduler=daemon to run it here)");
      return kExitUsage;
    }
    if (CliResult<CheckedData> data = CheckJobData(job); !data.ok()) return Report(data.error());
    const std::string resolved = config::FormatResolvedJob(job);
    if (resume) {
      auto found = FindResumableJob(*store, resolved);
      if (!found.ok()) {
        PrintError(found.status().message());
        return kExitFailed;
      }
      job_id = found.value();
    } else {
      store::JobRecord record;
      record.name = job.name;
      record.owner_uid = static_cast<std::int64_t>(::getuid());
      record.spec_toml = resolved;
      record.tags = job.tags;
      auto created = store->CreateJob(record);
      if (!created.ok()) {
        PrintError(created.status().message());
        return kExitFailed;
      }
      job_id = created.value();
    }
  }
  if (resume) {
    Status prepared = PrepareResume(*store, job_id);
    if (prepared.ok() && !args.resume.empty() && !args.overrides.empty()) {
      prepared = store->SetJobSpec(job_id, config::FormatResolvedJob(job),
                                   config::ResumeSettingsReason(args.overrides));
    }
    if (!prepared.ok()) {
      PrintError(prepared.message());
      return kExitFailed;
    }
  }

  if (job.cluster.Processes() > 1) {
    return RunWithWorkers(args, job, job_id, *store);
  }
  auto worker = store->RecordWorkerStart(job_id, 0, "replica", net::LocalHostName(), ::getpid());
  if (!worker.ok()) {
    PrintError(worker.status().message());
    return kExitFailed;
  }
  InstallStopHandlers();
  ProgressPrinter progress(args.json);
  runner::RunOptions options;
  options.stop = StopFlag();
  options.observer = &progress;
  options.resume_command = ResumeCommand(args, job_id);
  auto outcome = runner::RunJobInProcess(job, job_id, *store, options);
  progress.Finish();
  const int code = !outcome.ok()                                          ? kExitFailed
                   : outcome.value().state == store::JobState::kSucceeded ? kExitOk
                   : outcome.value().state == store::JobState::kCancelled ? kExitInterrupted
                                                                          : kExitFailed;
  Status exited = store->RecordWorkerExit(worker.value(), code, 0);
  if (!outcome.ok()) {
    PrintError("job " + std::to_string(job_id) + ": " + outcome.status().message());
    return kExitFailed;
  }
  if (!exited.ok()) PrintError(exited.message());
  PrintSummary(args, job, job_id, outcome.value(), *store);
  return code;
}

}  // namespace

void AddRunCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* run = app.add_subcommand(
      "run", "Train a job in the foreground, without a daemon, recording into a local store");
  run->add_option("job_file", args->job_file, "The job file (job.toml)");
  run->add_option("--set", args->overrides,
                  "Override a job-file key: --set train.epochs=1 (with --resume JOB: only what "
                  "may change on resume)")
      ->type_name("KEY=VALUE");
  run->add_option("--tag", args->tags, "Tag the job (besides the job file's tags; repeatable)")
      ->type_name("TAG");
  run->add_option("--db", args->db, "The store file")->type_name("PATH")->capture_default_str();
  run->add_flag("--json", args->json, "Print one JSON object as the summary");
  CLI::Option* resume =
      run->add_option("--resume", args->resume,
                      "Continue a job from its newest checkpoint: by id, or (no value) the "
                      "newest unfinished job of this job file")
          ->type_name("JOB")
          ->expected(0, 1);
  run->callback([args, resume, &exit_code] {
    args->resume_flag = resume->count() > 0;
    exit_code = Run(*args);
  });
}

}  // namespace dtrain::cli
