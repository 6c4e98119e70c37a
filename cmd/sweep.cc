// dtrain sweep: hyperparameter sweeps over a base job (man dtrain-sweep.toml(5)). `sweep run`
// trains every trial in the foreground, one after another, each a job of a local store as
// `dtrain run` trains one, and prints the leaderboard. ASHA (config/sweep_asha.h) trains each
// trial to a rung, where its job ends succeeded (paused), and promotes one by resuming the same
// job from its checkpoint with the next rung's train.steps. The daemon's subcommands (submit,
// status, cancel, best, list) are in sweep_daemon.cc.
#include <CLI/CLI.hpp>
#include <iostream>
#include <limits>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/data_checks.h"
#include "cmd/exit_codes.h"
#include "cmd/interrupt.h"
#include "cmd/local_job.h"
#include "cmd/stored_job.h"
#include "cmd/sweep_board.h"
#include "cmd/terminal.h"
#include "config/resume_settings.h"
#include "config/sweep_asha.h"
#include "config/sweep_file.h"
#include "core/net/host_info.h"

namespace dtrain::cli {
namespace {

struct SweepRunArgs {
  std::string sweep_file;
  std::string db = kDefaultDb;
  bool json = false;
  bool dry_run = false;
};

// The trials and their values, without training: a table, or {"trials": [...]} with --json.
void PrintPlan(const SweepRunArgs& args, const config::SweepSpec& sweep,
               const std::vector<config::ResolvedTrial>& trials) {
  std::vector<TrialOutcome> planned;
  for (const config::ResolvedTrial& t : trials)
    planned.push_back({t.trial, 0, "not run", 0, {}, ""});
  if (args.json) {
    std::cout << BoardJson(sweep, planned, args.db).dump() << std::endl;
    return;
  }
  std::printf("%s: %zu trials (%s, by %s, %s)\n", args.sweep_file.c_str(), trials.size(),
              std::string(config::SweepMethodName(sweep.method)).c_str(), sweep.metric.c_str(),
              std::string(config::SweepGoalName(sweep.goal)).c_str());
  PrintBoard(std::cout, sweep, planned, ColorOnStdout());
}

// Trains `job`, the trial's job `outcome->job` of the store, to its end: the outcome's state,
// steps and reason as the run left them.
void RunTrialJob(const config::JobConfig& job, store::Store& store, const SweepRunArgs& args,
                 TrialOutcome* outcome) {
  const LocalRun ran = RunLocalJob(job, outcome->job, store, {args.db, args.json});
  outcome->state = "failed";
  if (ran.outcome) {
    outcome->state = store::JobStateName(ran.outcome->state);
    outcome->steps = ran.outcome->steps;
    outcome->reason = ran.outcome->reason;
  }
}

void PrintTrialEnd(const SweepRunArgs& args, const config::SweepSpec& sweep,
                   const TrialOutcome& outcome) {
  if (args.json) return;
  std::printf("  %s after %lld steps: %s %s\n", outcome.state.c_str(),
              static_cast<long long>(outcome.steps), sweep.metric.c_str(),
              outcome.metric ? std::to_string(*outcome.metric).c_str() : "not recorded");
  if (outcome.state != "succeeded" && !outcome.reason.empty()) {
    std::printf("  %s\n", outcome.reason.c_str());
  }
  std::fflush(stdout);
}

// Grid and random search: every trial trained to its end, one after another.
Result<std::vector<TrialOutcome>> RunEveryTrial(const SweepRunArgs& args,
                                                const config::SweepSpec& sweep,
                                                const std::vector<config::ResolvedTrial>& trials,
                                                store::Store& store) {
  std::vector<TrialOutcome> outcomes;
  for (const config::ResolvedTrial& t : trials) {
    TrialOutcome outcome{t.trial, 0, "not run", 0, {}, ""};
    if (StopRequested()) {
      outcomes.push_back(std::move(outcome));
      continue;
    }
    Result<std::int64_t> created = CreateLocalJob(store, t.job);
    if (!created.ok()) return created.status();
    outcome.job = created.value();
    if (!args.json) {
      std::printf("trial %lld/%zu (%s): job %lld\n", static_cast<long long>(t.trial.index + 1),
                  trials.size(), config::TrialLabel(t.trial).c_str(),
                  static_cast<long long>(outcome.job));
      std::fflush(stdout);
    }
    RunTrialJob(t.job, store, args, &outcome);
    outcome.metric = FinalMetric(store, outcome.job, t.job, sweep.metric);
    PrintTrialEnd(args, sweep, outcome);
    outcomes.push_back(std::move(outcome));
  }
  return outcomes;
}

// A promotion: the trial's job, ended succeeded at its rung, queued again with the next rung's
// train.steps, by the path `dtrain run --resume JOB --set train.steps=N` takes (it resumes from
// its newest checkpoint, the one written at the rung's last step): its new job file and its
// state in one transaction, as the daemon promotes one (Store::RequeueJob).
Result<config::JobConfig> PromoteTrial(store::Store& store, std::int64_t job_id,
                                       const config::AshaAction& promotion) {
  Result<store::JobRecord> record = store.GetJob(job_id);
  if (!record.ok()) return record.status();
  const std::vector<std::string> overrides = config::AshaRungOverrides(promotion.steps);
  config::LoadResult settled = config::ApplyResumeSettings(
      record.value().spec_toml, "job " + std::to_string(job_id), overrides);
  if (!settled.ok()) return Status::Error(config::FormatDiagnostic(settled.diagnostics.front()));
  if (Status s = store.RequeueJob(
          job_id, config::AshaPromotedReason(promotion.rung, promotion.steps),
          config::FormatResolvedJob(*settled.job), config::ResumeSettingsReason(overrides));
      !s.ok()) {
    return s;
  }
  return std::move(*settled.job);
}

// ASHA: the actions config::NextAshaAction asks for, one at a time, until it is done. A trial's
// rung is complete when its job succeeded at exactly the rung's steps; its metric there is the
// one recorded at that step (every run evaluates at its last step). A trial that ends otherwise
// (failed, or stopped early by train.early_stopping or train.target_accuracy) goes no further.
Result<std::vector<TrialOutcome>> RunAsha(const SweepRunArgs& args, const config::SweepSpec& sweep,
                                          const std::vector<config::ResolvedTrial>& trials,
                                          store::Store& store) {
  const std::vector<std::int64_t> rungs = config::AshaRungs(sweep.asha);
  const int last = static_cast<int>(rungs.size()) - 1;
  std::vector<TrialOutcome> outcomes;
  for (const config::ResolvedTrial& t : trials)
    outcomes.push_back({t.trial, 0, "not run", 0, {}, ""});
  std::vector<config::AshaTrial> state;
  while (!StopRequested()) {
    const config::AshaAction next =
        config::NextAshaAction(sweep.asha, sweep.goal, sweep.max_trials, state);
    if (next.kind != config::AshaAction::Kind::kStart &&
        next.kind != config::AshaAction::Kind::kPromote) {
      break;  // done (one trial at a time: never waiting on another)
    }
    TrialOutcome& outcome = outcomes[static_cast<std::size_t>(next.trial)];
    config::JobConfig job = trials[static_cast<std::size_t>(next.trial)].job;  // at rung 0
    if (next.kind == config::AshaAction::Kind::kStart) {
      Result<std::int64_t> created = CreateLocalJob(store, job);
      if (!created.ok()) return created.status();
      outcome.job = created.value();
      state.emplace_back();
    } else {
      Result<config::JobConfig> promoted = PromoteTrial(store, outcome.job, next);
      if (!promoted.ok()) return promoted.status();
      job = std::move(promoted.value());
    }
    if (!args.json) {
      std::printf("trial %lld/%lld (%s): job %lld, %s rung %d of %d (%lld steps)\n",
                  static_cast<long long>(next.trial + 1), static_cast<long long>(sweep.max_trials),
                  config::TrialLabel(outcome.trial).c_str(), static_cast<long long>(outcome.job),
                  next.rung == 0 ? "to" : "promoted to", next.rung, last,
                  static_cast<long long>(next.steps));
      std::fflush(stdout);
    }
    config::AshaTrial& t = state[static_cast<std::size_t>(next.trial)];
    RunTrialJob(job, store, args, &outcome);
    if (outcome.state == "succeeded" && outcome.steps == next.steps) {
      outcome.rung = next.rung;
      outcome.metric = FinalMetric(store, outcome.job, job, sweep.metric, next.steps);
      t.metrics.push_back(outcome.metric.value_or(std::numeric_limits<double>::quiet_NaN()));
      if (next.rung < last) {
        outcome.reason = config::AshaPausedReason(next.rung, next.steps);
        if (Status s = store.NoteReason(outcome.job, outcome.reason); !s.ok()) return s;
      }
    } else {
      t.ended = true;
      if (outcome.rung < 0) outcome.metric = FinalMetric(store, outcome.job, job, sweep.metric);
    }
    PrintTrialEnd(args, sweep, outcome);
  }
  if (StopRequested()) return outcomes;  // those paused stay so, their reasons say where
  // The trials left paused below the last rung go no further.
  for (TrialOutcome& outcome : outcomes) {
    if (outcome.state != "succeeded" || outcome.rung < 0 || outcome.rung == last) continue;
    outcome.reason = config::AshaStoppedReason(sweep.asha, outcome.rung);
    if (Status s = store.NoteReason(outcome.job, outcome.reason); !s.ok()) return s;
  }
  return outcomes;
}

int RunSweep(const SweepRunArgs& args) {
  config::SweepLoadResult loaded = config::LoadSweepFile(
      args.sweep_file, {config::DataFiles::kCheck, net::PhysicalMemory(), true});
  if (!loaded.ok()) {
    PrintDiagnostics(loaded.diagnostics, args.sweep_file);
    return kExitUsage;
  }
  const config::SweepSpec& sweep = *loaded.sweep;
  for (const config::ResolvedTrial& t : loaded.trials) {
    if (t.job.cluster.scheduler == config::Scheduler::kSlurm) {
      PrintError(args.sweep_file +
                 ": cluster.scheduler = \"slurm\": dtrain sweep run trains "
                 "here; set cluster.scheduler = \"daemon\" in the base job");
      return kExitUsage;
    }
  }
  if (args.dry_run) {
    PrintPlan(args, sweep, loaded.trials);
    return kExitOk;
  }
  if (!CheckTrialsData(loaded.trials)) return kExitUsage;
  CliResult<std::unique_ptr<store::Store>> opened = OpenStore(args.db);
  if (!opened.ok()) return Report(opened.error());
  store::Store& store = *opened.value();

  Result<std::vector<TrialOutcome>> outcomes =
      sweep.method == config::SweepMethod::kAsha ? RunAsha(args, sweep, loaded.trials, store)
                                                 : RunEveryTrial(args, sweep, loaded.trials, store);
  if (!outcomes.ok()) {
    PrintError(outcomes.status().message());
    return kExitFailed;
  }
  const std::vector<TrialOutcome> board = Ranked(std::move(outcomes.value()), sweep.goal);
  if (args.json) {
    std::cout << BoardJson(sweep, board, args.db).dump() << std::endl;
  } else {
    std::printf("\n");
    PrintBoard(std::cout, sweep, board, ColorOnStdout());
    std::printf("store: %s (a trial's metrics: dtrain metrics JOB --db %s)\n", args.db.c_str(),
                args.db.c_str());
  }
  if (StopRequested()) return kExitInterrupted;
  for (const TrialOutcome& t : board) {
    if (t.state != "succeeded") return kExitFailed;
  }
  return kExitOk;
}

void AddSweepRunCommand(CLI::App& sweep, int& exit_code) {
  auto args = std::make_shared<SweepRunArgs>();
  CLI::App* run = sweep.add_subcommand(
      "run", "Train every trial of a sweep here, one after another, then print the leaderboard");
  run->add_option("sweep_file", args->sweep_file, "The sweep file (sweep.toml)")->required();
  run->add_option("--db", args->db, "The store file")->type_name("PATH")->capture_default_str();
  run->add_flag("--json", args->json, "Print the leaderboard as one JSON object");
  run->add_flag("--dry-run", args->dry_run, "Print the trials and their values without training");
  run->callback([args, &exit_code] { exit_code = RunSweep(*args); });
}

}  // namespace

void AddSweepCommand(CLI::App& app, Globals globals, int& exit_code) {
  CLI::App* sweep = app.add_subcommand("sweep", "Hyperparameter sweeps over a base job");
  sweep->require_subcommand(1);
  AddSweepRunCommand(*sweep, exit_code);
  AddSweepDaemonCommands(*sweep, std::move(globals), exit_code);
}

}  // namespace dtrain::cli
