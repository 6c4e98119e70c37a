// dtrain sweep submit|status|cancel|best|list: sweeps the daemon runs (man dtrain(1),
// dtrain-sweep.toml(5)). `submit` checks the sweep file here, as the submitter, with every
// trial's data (as `dtrain submit` checks a job), and sends the file's text; the daemon checks
// every trial again and runs them as its jobs. `status` prints the leaderboard `sweep run`
// prints (sweep_board.h); `best` the best finished trial's job, for `dtrain export`.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <system_error>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/daemon_client.h"
#include "cmd/data_checks.h"
#include "cmd/exit_codes.h"
#include "cmd/sweep_board.h"
#include "cmd/terminal.h"
#include "cmd/text_table.h"
#include "config/sweep_file.h"

namespace dtrain::cli {
namespace {

using json = nlohmann::json;

struct SweepArgs {
  std::string sweep_file;
  std::int64_t id = 0;
  bool json = false;
};

std::string SweepName(std::int64_t id) { return "sweep " + std::to_string(id); }

// The request's reply, or the error to report.
CliResult<json> Ask(const GlobalOptions& globals, json request) {
  CliResult<DaemonClient> client = DaemonClient::Connect(globals);
  if (!client.ok()) return client.error();
  return client.value().Request(std::move(request));
}

int SubmitSweep(const SweepArgs& args, const GlobalOptions& globals) {
  config::SweepLoadResult loaded =
      config::LoadSweepFile(args.sweep_file, {config::DataFiles::kCheck});
  if (!loaded.ok()) {
    PrintDiagnostics(loaded.diagnostics, args.sweep_file);
    return kExitUsage;
  }
  // The data checks of dtrain submit, for every trial, here where the submitter's rights are.
  if (!CheckTrialsData(loaded.trials)) return kExitUsage;
  std::ifstream in(args.sweep_file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) {
    PrintError(args.sweep_file + ": cannot read it again");
    return kExitUsage;
  }
  std::error_code error;
  const std::filesystem::path path =
      std::filesystem::absolute(args.sweep_file, error).lexically_normal();
  const config::SweepSpec& spec = *loaded.sweep;
  json request = {{"type", "sweep_submit"},
                  {"sweep_toml", text.str()},
                  {"job_toml", spec.job_without == "sweep" ? "" : spec.job_text},
                  {"source", path.string()},
                  {"base_dir", path.parent_path().string()}};
  CliResult<json> reply = Ask(globals, std::move(request));
  if (!reply.ok()) return Report(reply.error());
  const json& sweep = reply.value()["sweep"];
  if (args.json) {
    std::cout << sweep.dump() << std::endl;
    return kExitOk;
  }
  std::printf("%s: %lld trials (%s, by %s, %s), at most %lld at a time\n",
              SweepName(sweep["id"].get<std::int64_t>()).c_str(),
              static_cast<long long>(sweep["trials"].get<std::int64_t>()),
              sweep["method"].get<std::string>().c_str(),
              sweep["metric"].get<std::string>().c_str(), sweep["goal"].get<std::string>().c_str(),
              static_cast<long long>(sweep["max_concurrent"].get<std::int64_t>()));
  std::printf("follow it: dtrain sweep status %lld\n",
              static_cast<long long>(sweep["id"].get<std::int64_t>()));
  return kExitOk;
}

// A TRIAL of the daemon's reply as the board's outcome.
TrialOutcome OutcomeOf(const json& t) {
  TrialOutcome outcome;
  outcome.trial.index = t["trial"].get<std::int64_t>();
  for (const json& p : t["parameters"]) {
    outcome.trial.parameters.push_back({p["key"].get<std::string>(),
                                        {p["toml"].get<std::string>(), p["json"].get<std::string>(),
                                         p["shown"].get<std::string>()}});
  }
  outcome.job = t["job"].is_null() ? 0 : t["job"].get<std::int64_t>();
  outcome.state = t["state"].get<std::string>();
  outcome.steps = t["steps"].get<std::int64_t>();
  if (!t["metric"].is_null()) outcome.metric = t["metric"].get<double>();
  outcome.reason = t["reason"].get<std::string>();
  if (t.contains("rung") && !t["rung"].is_null()) outcome.rung = t["rung"].get<int>();
  return outcome;
}

// The sweep as the board shows it: its method, metric, goal, ASHA's rungs and parameters' keys.
config::SweepSpec SpecOf(const json& sweep, const std::vector<TrialOutcome>& outcomes) {
  config::SweepSpec spec;
  spec.path = sweep["source"].get<std::string>();
  const std::string method = sweep["method"].get<std::string>();
  spec.method = method == "grid"   ? config::SweepMethod::kGrid
                : method == "asha" ? config::SweepMethod::kAsha
                                   : config::SweepMethod::kRandom;
  spec.metric = sweep["metric"].get<std::string>();
  spec.goal = sweep["goal"] == "min" ? config::SweepGoal::kMin : config::SweepGoal::kMax;
  if (sweep.contains("asha")) {
    spec.asha = {sweep["asha"]["min_steps"].get<std::int64_t>(),
                 sweep["asha"]["max_steps"].get<std::int64_t>(),
                 sweep["asha"]["reduction_factor"].get<std::int64_t>()};
  }
  if (!outcomes.empty()) {
    for (const config::TrialParameter& p : outcomes.front().trial.parameters) {
      config::SweepParameter parameter;
      parameter.key = p.key;
      spec.parameters.push_back(std::move(parameter));
    }
  }
  return spec;
}

int SweepStatus(const SweepArgs& args, const GlobalOptions& globals) {
  CliResult<json> reply = Ask(globals, {{"type", "sweep_status"}, {"id", args.id}});
  if (!reply.ok()) return Report(reply.error());
  const json& sweep = reply.value()["sweep"];
  std::vector<TrialOutcome> outcomes;
  for (const json& t : reply.value()["trials"]) outcomes.push_back(OutcomeOf(t));
  const config::SweepSpec spec = SpecOf(sweep, outcomes);
  const config::SweepGoal goal = spec.goal;
  const std::vector<TrialOutcome> board = Ranked(std::move(outcomes), goal);
  if (args.json) {
    json out = BoardJson(spec, board, "");
    out.erase("db");
    out["id"] = args.id;
    out["state"] = sweep["state"];
    out["reason"] = sweep["reason"];
    out["best"] = reply.value()["best"];
    std::cout << out.dump() << std::endl;
    return kExitOk;
  }
  std::size_t ended = 0;
  for (const TrialOutcome& t : board) {
    ended += t.state == "succeeded" || t.state == "failed" || t.state == "cancelled" ||
                     t.state == "removed"
                 ? 1
                 : 0;
  }
  std::printf("%s (%s): %s, %zu of %zu trials ended (%s, by %s, %s)\n", SweepName(args.id).c_str(),
              spec.path.c_str(), sweep["state"].get<std::string>().c_str(), ended, board.size(),
              sweep["method"].get<std::string>().c_str(), spec.metric.c_str(),
              sweep["goal"].get<std::string>().c_str());
  if (sweep["state"] != "running" && !sweep["reason"].get<std::string>().empty()) {
    std::printf("  %s\n", sweep["reason"].get<std::string>().c_str());
  }
  PrintBoard(std::cout, spec, board, ColorOnStdout());
  return kExitOk;
}

int CancelSweep(const SweepArgs& args, const GlobalOptions& globals) {
  CliResult<json> reply = Ask(globals, {{"type", "sweep_cancel"}, {"id", args.id}});
  if (!reply.ok()) return Report(reply.error());
  if (args.json) {
    std::cout << reply.value()["sweep"].dump() << std::endl;
    return kExitOk;
  }
  std::size_t finished = 0;
  for (const json& t : reply.value()["trials"]) finished += t["state"] == "succeeded" ? 1 : 0;
  std::printf("%s cancelled (%zu finished trial%s kept)\n", SweepName(args.id).c_str(), finished,
              finished == 1 ? "" : "s");
  return kExitOk;
}

int BestTrial(const SweepArgs& args, const GlobalOptions& globals) {
  CliResult<json> reply = Ask(globals, {{"type", "sweep_best"}, {"id", args.id}});
  if (!reply.ok()) return Report(reply.error());
  const json& best = reply.value()["best"];
  const json& sweep = reply.value()["sweep"];
  if (best.is_null()) {
    if (args.json) std::cout << json(nullptr).dump() << std::endl;
    PrintError(SweepName(args.id) + " has no succeeded trial with " +
               sweep["metric"].get<std::string>() + " yet (" + sweep["state"].get<std::string>() +
               ")");
    return kExitNotFound;
  }
  if (args.json) {
    std::cout << best.dump() << std::endl;
  } else {
    std::cout << best["job"].get<std::int64_t>() << std::endl;
  }
  return kExitOk;
}

int ListSweeps(const SweepArgs& args, const GlobalOptions& globals) {
  CliResult<json> reply = Ask(globals, {{"type", "sweep_list"}});
  if (!reply.ok()) return Report(reply.error());
  const json& sweeps = reply.value()["sweeps"];
  if (args.json) {
    std::cout << sweeps.dump() << std::endl;
    return kExitOk;
  }
  TextTable table({"ID", "STATE", "METHOD", "TRIALS", "METRIC", "SOURCE"},
                  {true, false, false, true, false, false});
  for (const json& s : sweeps) {
    table.AddRow({{std::to_string(s["id"].get<std::int64_t>())},
                  {s["state"].get<std::string>()},
                  {s["method"].get<std::string>()},
                  {std::to_string(s["trials"].get<std::int64_t>())},
                  {s["metric"].get<std::string>() + " (" + s["goal"].get<std::string>() + ")"},
                  {s["source"].get<std::string>()}});
  }
  table.Print(std::cout, ColorOnStdout());
  return kExitOk;
}

// A subcommand of `sweep` taking a sweep ID and --json, run by `run`.
void AddIdCommand(CLI::App& sweep, const char* name, const char* about, Globals globals,
                  int& exit_code, int (*run)(const SweepArgs&, const GlobalOptions&)) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* cmd = sweep.add_subcommand(name, about);
  cmd->add_option("id", args->id, "The sweep's id")->required();
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args, globals, run, &exit_code] { exit_code = run(*args, *globals); });
}

}  // namespace

void AddSweepDaemonCommands(CLI::App& sweep, Globals globals, int& exit_code) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* submit = sweep.add_subcommand(
      "submit", "Check a sweep file and have the daemon run its trials as jobs; print its id");
  submit->add_option("sweep_file", args->sweep_file, "The sweep file (sweep.toml)")->required();
  submit->add_flag("--json", args->json, "Print the sweep object");
  submit->callback([args, globals, &exit_code] { exit_code = SubmitSweep(*args, *globals); });
  AddIdCommand(sweep, "status", "Show a sweep's leaderboard: its trials, ranked by its metric",
               globals, exit_code, SweepStatus);
  AddIdCommand(sweep, "cancel", "Cancel a sweep and its trials not ended; finished ones stay",
               globals, exit_code, CancelSweep);
  AddIdCommand(sweep, "best", "Print the job id of a sweep's best succeeded trial", globals,
               exit_code, BestTrial);
  auto list_args = std::make_shared<SweepArgs>();
  CLI::App* list = sweep.add_subcommand("list", "List your sweeps, newest first");
  list->add_flag("--json", list_args->json, "Print a JSON array of sweep objects");
  list->callback(
      [list_args, globals, &exit_code] { exit_code = ListSweeps(*list_args, *globals); });
}

}  // namespace dtrain::cli
