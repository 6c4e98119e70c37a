// dtrain metrics: read a job's metrics back from the store, as a table, CSV or JSON.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/stored_job.h"
#include "cmd/terminal.h"

namespace dtrain::cli {
namespace {

struct MetricsArgs {
  std::int64_t job = 0;
  std::string db = kDefaultDb;
  std::string name;  // substring of the metric name; empty: all
  std::string format = "table";
};

int Metrics(const MetricsArgs& args) {
  std::unique_ptr<store::Store> store = OpenStoreOrReport(args.db);
  if (!store) return kExitFailed;
  auto job = store->GetJob(args.job);
  if (!job.ok()) {
    PrintError(job.status().message());
    return kExitFailed;
  }
  auto rows = store->Metrics(args.job, "");
  if (!rows.ok()) {
    PrintError(rows.status().message());
    return kExitFailed;
  }
  std::vector<store::MetricRow> kept;
  for (store::MetricRow& row : rows.value()) {
    if (row.name.find(args.name) != std::string::npos) kept.push_back(std::move(row));
  }
  if (args.format == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (const store::MetricRow& r : kept) {
      out.push_back({{"step", r.step},
                     {"epoch", r.epoch},
                     {"worker", r.worker},
                     {"name", r.name},
                     {"value", r.value},
                     {"time", r.time}});
    }
    std::cout << out.dump() << std::endl;
  } else if (args.format == "csv") {
    std::printf("step,epoch,worker,name,value,time\n");
    for (const store::MetricRow& r : kept) {
      std::printf("%lld,%.6f,%d,%s,%.9g,%.3f\n", static_cast<long long>(r.step), r.epoch,
                  r.worker, r.name.c_str(), r.value, r.time);
    }
  } else {
    std::printf("%10s %8s %6s  %-16s %14s\n", "STEP", "EPOCH", "WORKER", "NAME", "VALUE");
    for (const store::MetricRow& r : kept) {
      std::printf("%10lld %8.3f %6d  %-16s %14.6g\n", static_cast<long long>(r.step), r.epoch,
                  r.worker, r.name.c_str(), r.value);
    }
  }
  return kExitOk;
}

}  // namespace

void AddMetricsCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<MetricsArgs>();
  CLI::App* cmd = app.add_subcommand("metrics", "Print a job's recorded metrics");
  cmd->add_option("job", args->job, "The job id")->required();
  cmd->add_option("--db", args->db, "The store file")->type_name("PATH")->capture_default_str();
  cmd->add_option("--name", args->name,
                  "Only metrics whose name contains this (e.g. loss, eval_accuracy)")
      ->type_name("NAME");
  cmd->add_option("--format", args->format, "Output format")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->capture_default_str();
  cmd->callback([args, &exit_code] { exit_code = Metrics(*args); });
}

}  // namespace dtrain::cli
