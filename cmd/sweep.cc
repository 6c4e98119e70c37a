// dtrain sweep: hyperparameter sweeps over a base job (man dtrain-sweep.toml(5)). `sweep run`
// trains every trial in the foreground, one after another, each a job of a local store as
// `dtrain run` trains one, and prints the leaderboard. The daemon's subcommands (submit, status,
// cancel, best, list) are in sweep_daemon.cc.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/data_checks.h"
#include "cmd/exit_codes.h"
#include "cmd/interrupt.h"
#include "cmd/local_job.h"
#include "cmd/stored_job.h"
#include "cmd/sweep_board.h"
#include "cmd/terminal.h"
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

int RunSweep(const SweepRunArgs& args) {
  config::SweepLoadResult loaded = config::LoadSweepFile(
      args.sweep_file, {config::DataFiles::kCheck, net::PhysicalMemory(), true});
  if (!loaded.ok()) {
    PrintDiagnostics(loaded.diagnostics, args.sweep_file);
    return kExitUsage;
  }
  const config::SweepSpec& sweep = *loaded.sweep;
  if (sweep.method == config::SweepMethod::kAsha) {
    PrintError(args.sweep_file +
               ": sweep.method = \"asha\" needs the daemon, which does not run "
               "sweeps yet: use \"random\" or \"grid\" with dtrain sweep run");
    return kExitUsage;
  }
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

  std::vector<TrialOutcome> outcomes;
  for (const config::ResolvedTrial& t : loaded.trials) {
    TrialOutcome outcome{t.trial, 0, "not run", 0, {}, ""};
    if (StopRequested()) {
      outcomes.push_back(std::move(outcome));
      continue;
    }
    Result<std::int64_t> created = CreateLocalJob(store, t.job);
    if (!created.ok()) {
      PrintError(created.status().message());
      return kExitFailed;
    }
    outcome.job = created.value();
    if (!args.json) {
      std::printf("trial %lld/%zu (%s): job %lld\n", static_cast<long long>(t.trial.index + 1),
                  loaded.trials.size(), config::TrialLabel(t.trial).c_str(),
                  static_cast<long long>(outcome.job));
      std::fflush(stdout);
    }
    const LocalRun ran = RunLocalJob(t.job, outcome.job, store, {args.db, args.json});
    outcome.state = "failed";
    if (ran.outcome) {
      outcome.state = store::JobStateName(ran.outcome->state);
      outcome.steps = ran.outcome->steps;
      outcome.reason = ran.outcome->reason;
    }
    outcome.metric = FinalMetric(store, outcome.job, t.job, sweep.metric);
    if (!args.json) {
      std::printf("  %s after %lld steps: %s %s\n", outcome.state.c_str(),
                  static_cast<long long>(outcome.steps), sweep.metric.c_str(),
                  outcome.metric ? std::to_string(*outcome.metric).c_str() : "not recorded");
      if (outcome.state != "succeeded" && !outcome.reason.empty()) {
        std::printf("  %s\n", outcome.reason.c_str());
      }
    }
    outcomes.push_back(std::move(outcome));
  }

  const std::vector<TrialOutcome> board = Ranked(std::move(outcomes), sweep.goal);
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
