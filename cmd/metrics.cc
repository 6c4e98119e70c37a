// dtrain metrics: a job's recorded metrics, from the daemon or from a store file (--db), as a
// table, CSV, JSON or a plot over steps.
#include "core/train/metrics.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cmd/choices.h"
#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/human.h"
#include "cmd/job_reader.h"
#include "cmd/plot.h"
#include "cmd/terminal.h"
#include "config/suggest.h"
#include "daemon/store/metric_value.h"

namespace dtrain::cli {
namespace {

struct MetricsArgs {
  std::int64_t job = 0;
  std::string db;    // empty: ask the daemon
  std::string name;  // substring of the metric name; empty: all
  std::string format = "table";
  bool plot = false;
  bool per_worker = false;  // --plot: a plot per worker, not their mean
};

// One plot per metric name; where several workers reported it, of the mean of the workers'
// values at each step (equal for sync replicas), or with per_worker one per name and worker.
void Plot(const std::vector<store::MetricRow>& rows, bool per_worker) {
  std::map<std::string, std::set<int>> workers_of;
  for (const store::MetricRow& r : rows) workers_of[r.name].insert(r.worker);
  // (name, worker or -1 for the mean) -> its rows
  std::map<std::pair<std::string, int>, std::vector<store::MetricRow>> series;
  for (const store::MetricRow& r : rows) {
    const bool several = workers_of[r.name].size() > 1;
    series[{r.name, several && per_worker ? r.worker : -1}].push_back(r);
  }
  PlotStyle style;
  style.braille = TerminalIsUtf8();
  style.color = ColorOnStdout();
  bool first = true;
  for (const auto& [key, of_series] : series) {
    const auto& [name, worker] = key;
    const std::size_t reporting = workers_of[name].size();
    PlotSeries s;
    s.title = worker >= 0       ? name + " (worker " + std::to_string(worker) + ")"
              : reporting > 1   ? name + " (mean of " + std::to_string(reporting) + " workers)"
                                : name;
    s.points = MeanByStep(of_series);
    if (!first) std::cout << '\n';
    first = false;
    PrintPlot(s, style, std::cout);
  }
}

void Print(const std::vector<store::MetricRow>& rows, const std::string& format) {
  if (format == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (const store::MetricRow& r : rows) {
      out.push_back({{"step", r.step},
                     {"epoch", r.epoch},
                     {"worker", r.worker},
                     {"name", r.name},
                     {"value", store::MetricValueJson(r.value)},
                     {"time", r.time}});
    }
    std::cout << out.dump() << std::endl;
  } else if (format == "csv") {
    std::printf("step,epoch,worker,name,value,time\n");
    for (const store::MetricRow& r : rows) {
      std::printf("%lld,%.6f,%d,%s,%.9g,%.3f\n", static_cast<long long>(r.step), r.epoch, r.worker,
                  r.name.c_str(), r.value, r.time);
    }
  } else {
    std::printf("%10s %8s %6s  %-16s %14s\n", "STEP", "EPOCH", "WORKER", "NAME", "VALUE");
    bool windows = false;
    for (const store::MetricRow& r : rows) {
      std::printf("%10lld %8.3f %6d  %-16s %14s\n", static_cast<long long>(r.step), r.epoch,
                  r.worker, r.name.c_str(), FormatMetric(r.name, r.value).c_str());
      windows = windows || train::IsWindowCounter(r.name);
    }
    std::fflush(stdout);
    if (windows) {
      std::fprintf(stderr,
                   "compute_seconds, comm_seconds, wait_seconds, bytes_sent and the pipeline's "
                   "counters: each row counts its worker's steps since its previous row "
                   "(train.log_every), not a total\n");
    }
  }
}

// --name that no metric of the job has: the names it has, and the near one.
CliError NoSuchMetric(const MetricsArgs& args, JobReader& reader) {
  CliResult<std::vector<store::MetricRow>> rows = reader.Metrics(args.job, "");
  if (!rows.ok()) return rows.error();
  std::set<std::string> names;
  for (const store::MetricRow& row : rows.value()) names.insert(row.name);
  std::string message = "job " + std::to_string(args.job) + " has no metric whose name contains '" +
                        args.name + "'";
  if (names.empty()) return {kExitUsage, message + "; it has recorded no metrics yet", "", {}};
  // Candidates: the names and their words ("accuracy" of "eval_accuracy"), as --name matches parts.
  std::vector<std::string> words;
  std::string listed;
  for (const std::string& name : names) {
    listed += (listed.empty() ? "" : ", ") + name;
    words.push_back(name);
    for (std::size_t begin = 0, end; begin < name.size(); begin = end + 1) {
      end = std::min(name.find('_', begin), name.size());
      words.push_back(name.substr(begin, end - begin));
    }
  }
  message += "; its metrics: " + listed;
  const std::vector<std::string_view> candidates(words.begin(), words.end());
  if (const std::string_view close = config::ClosestName(args.name, candidates); !close.empty()) {
    message += " (did you mean --name " + std::string(close) + "?)";
  }
  return {kExitUsage, message, "", {}};
}

int Metrics(const MetricsArgs& args, const GlobalOptions& globals) {
  CliResult<JobReader> reader = JobReader::Open(args.db, globals);
  if (!reader.ok()) return Report(reader.error());
  CliResult<std::vector<store::MetricRow>> rows = reader.value().Metrics(args.job, args.name);
  if (!rows.ok()) return Report(rows.error());
  const std::vector<store::MetricRow>& kept = rows.value();
  if (kept.empty() && !args.name.empty()) return Report(NoSuchMetric(args, reader.value()));
  if (args.plot) {
    Plot(kept, args.per_worker);
  } else {
    Print(kept, args.format);
  }
  return kExitOk;
}

}  // namespace

void AddMetricsCommand(CLI::App& app, Globals globals, int& exit_code) {
  auto args = std::make_shared<MetricsArgs>();
  CLI::App* cmd = app.add_subcommand("metrics", "Print or plot a job's recorded metrics");
  cmd->add_option("job", args->job, "The job id")->required();
  cmd->add_option("--name", args->name,
                  "Only metrics whose name contains this (e.g. loss, eval_accuracy)")
      ->type_name("NAME");
  CLI::Option* format =
      Choices(cmd->add_option("--format", args->format, "Output format"), {"table", "csv", "json"})
          ->capture_default_str();
  CLI::Option* plot =
      cmd->add_flag("--plot", args->plot,
                    "Plot each metric over the steps in the terminal (the workers' mean)")
          ->excludes(format);
  cmd->add_flag("--per-worker", args->per_worker, "With --plot: a plot for each worker")
      ->needs(plot);
  cmd->add_option("--db", args->db, "Read this store file instead of asking the daemon")
      ->type_name("PATH");
  cmd->callback([args, globals, &exit_code] { exit_code = Metrics(*args, *globals); });
}

}  // namespace dtrain::cli
