// dtrain run: train a job in the foreground, recording into a local store file.
#include <CLI/CLI.hpp>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/data_checks.h"
#include "cmd/exit_codes.h"
#include "cmd/local_job.h"
#include "cmd/stored_job.h"
#include "cmd/terminal.h"
#include "config/job_file.h"
#include "config/resume_settings.h"
#include "config/tags_key.h"
#include "core/net/host_info.h"
#include "daemon/runner/local_run.h"
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
      auto created = CreateLocalJob(*store, job);
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

  const LocalRun ran = RunLocalJob(job, job_id, *store, {args.db, args.json});
  if (ran.outcome) PrintSummary(args, job, job_id, *ran.outcome, *store);
  return ran.exit_code;
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
