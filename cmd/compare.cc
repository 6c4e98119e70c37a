// dtrain compare: several jobs' runs of one metric side by side, from the daemon or from a store
// file (--db): a table of each job's final and best value beside the settings in which the jobs
// differ, their curves overlaid in one plot (--plot), or one JSON object (--json).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/compare_view.h"
#include "cmd/exit_codes.h"
#include "cmd/job_reader.h"
#include "cmd/job_view.h"
#include "cmd/plot.h"
#include "cmd/terminal.h"
#include "config/suggest.h"

namespace dtrain::cli {
namespace {

struct CompareArgs {
  std::vector<std::int64_t> jobs;
  std::string name;  // the metric, exactly
  std::string db;    // empty: ask the daemon
  bool plot = false;
  bool json = false;
};

std::string JobList(const std::vector<std::int64_t>& jobs) {
  std::string out;
  for (const std::int64_t id : jobs) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out;
}

// --name that none of the jobs recorded: the names they did, and the near one.
CliError NoSuchMetric(const CompareArgs& args, JobReader& reader) {
  std::set<std::string> names;
  for (const std::int64_t id : args.jobs) {
    CliResult<std::vector<store::MetricRow>> rows = reader.Metrics(id, "");
    if (!rows.ok()) return rows.error();
    for (const store::MetricRow& row : rows.value()) names.insert(row.name);
  }
  std::string message =
      "none of jobs " + JobList(args.jobs) + " recorded a metric named '" + args.name + "'";
  if (names.empty()) return {kExitUsage, message + "; they have recorded no metrics yet", "", {}};
  std::string listed;
  for (const std::string& name : names) listed += (listed.empty() ? "" : ", ") + name;
  message += "; their metrics: " + listed;
  const std::vector<std::string_view> candidates(names.begin(), names.end());
  if (const std::string_view close = config::ClosestName(args.name, candidates); !close.empty()) {
    message += " (did you mean --name " + std::string(close) + "?)";
  }
  return {kExitUsage, message, "", {}};
}

CliResult<Comparison> Gather(const CompareArgs& args, JobReader& reader) {
  Comparison comparison{args.name, config::NaturalGoal(args.name), {}, {}};
  std::vector<config::JobSettings> settings;
  for (const std::int64_t id : args.jobs) {
    CliResult<nlohmann::json> object = reader.Job(id);
    if (!object.ok()) return object.error();
    const JobInfo info = ParseJob(object.value());
    CliResult<std::vector<store::MetricRow>> rows = reader.Metrics(id, args.name);
    if (!rows.ok()) return rows.error();
    std::erase_if(rows.value(),
                  [&args](const store::MetricRow& row) { return row.name != args.name; });
    comparison.jobs.push_back({id, info.name, info.state, info.step, MeanByStep(rows.value())});
    CliResult<std::string> spec = reader.Settings(id);
    if (!spec.ok()) return spec.error();
    Result<config::JobSettings> flat =
        config::FlattenJobText(spec.value(), "job " + std::to_string(id) + "'s job file");
    if (!flat.ok()) return ErrorFrom(flat.status());
    std::erase_if(flat.value(), [](const auto& entry) { return ShownApart(entry.first); });
    settings.push_back(std::move(flat).value());
  }
  comparison.differing = config::DifferingSettings(settings);
  return comparison;
}

int Compare(const CompareArgs& args, const GlobalOptions& globals) {
  if (args.jobs.size() < 2) {
    return Report({kExitUsage, "compare needs at least 2 jobs, got " + JobList(args.jobs), "", {}});
  }
  for (std::size_t i = 0; i < args.jobs.size(); ++i) {
    if (std::find(args.jobs.begin(), args.jobs.begin() + i, args.jobs[i]) !=
        args.jobs.begin() + i) {
      return Report(
          {kExitUsage, "job " + std::to_string(args.jobs[i]) + " is named twice", "", {}});
    }
  }
  CliResult<JobReader> reader = JobReader::Open(args.db, globals);
  if (!reader.ok()) return Report(reader.error());
  CliResult<Comparison> comparison = Gather(args, reader.value());
  if (!comparison.ok()) return Report(comparison.error());
  const Comparison& c = comparison.value();
  if (std::all_of(c.jobs.begin(), c.jobs.end(),
                  [](const ComparedJob& job) { return job.curve.empty(); })) {
    return Report(NoSuchMetric(args, reader.value()));
  }
  if (args.json) {
    std::cout << ComparisonJson(c, args.plot).dump() << std::endl;
    return kExitOk;
  }
  PrintComparison(std::cout, c, ColorOnStdout());
  if (args.plot) {
    std::vector<PlotSeries> series;
    for (const ComparedJob& job : c.jobs) {
      series.push_back(
          {"job " + std::to_string(job.id) + " (" + Printable(job.name) + ")", job.curve});
    }
    PlotStyle style;
    style.braille = TerminalIsUtf8();
    style.color = ColorOnStdout();
    std::cout << '\n';
    PrintPlots(c.metric, series, style, std::cout);
  }
  return kExitOk;
}

}  // namespace

void AddCompareCommand(CLI::App& app, Globals globals, int& exit_code) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "Compare jobs' runs of a metric: final and best values, differing settings");
  cmd->add_option("job", args->jobs, "The jobs to compare (at least 2)")
      ->required()
      ->type_name("JOB");
  cmd->add_option("--name", args->name, "The metric to compare (e.g. eval_accuracy, train_loss)")
      ->required()
      ->type_name("METRIC");
  cmd->add_flag("--plot", args->plot, "Overlay the jobs' curves of the metric in one plot");
  cmd->add_option("--db", args->db, "Read this store file instead of asking the daemon")
      ->type_name("PATH");
  cmd->add_flag("--json", args->json, "Print one JSON object (with --plot: each job's points too)");
  cmd->callback([args, globals, &exit_code] { exit_code = Compare(*args, *globals); });
}

}  // namespace dtrain::cli
