// JobReader: what the reading commands (`metrics`, `compare`) learn of a recorded job, from the
// daemon (one connection for every request) or from a store file (--db, what `dtrain run`
// records): the job's JOB object (daemon/control_protocol.md), its metric rows and its resolved
// job file.
//
//   CliResult<JobReader> reader = JobReader::Open(db, *globals);   // db empty: the daemon
//   CliResult<std::vector<store::MetricRow>> rows = reader.value().Metrics(7, "loss");
//   if (!rows.ok()) return Report(rows.error());   // no such job: exit 4, as everywhere
//
// A job the store or the daemon does not have is kExitNotFound; the daemon's refusals keep their
// code (a job file only its owner or root may read). One thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/daemon_client.h"
#include "daemon/store/store.h"

namespace dtrain::cli {

class JobReader {
 public:
  // The store file `db` when not empty (it must exist), else the daemon the globals name.
  static CliResult<JobReader> Open(const std::string& db, const GlobalOptions& globals);

  // The job's metric rows whose name contains `name` (all for an empty one), in the order the
  // store keeps them (by step).
  CliResult<std::vector<store::MetricRow>> Metrics(std::int64_t job, const std::string& name);
  // The job's JOB object, without its events.
  CliResult<nlohmann::json> Job(std::int64_t job);
  // The job's resolved job file as recorded (`settings`).
  CliResult<std::string> Settings(std::int64_t job);

 private:
  JobReader(std::string db, std::unique_ptr<store::Store> store, std::optional<DaemonClient> client)
      : db_(std::move(db)), store_(std::move(store)), client_(std::move(client)) {}

  std::string db_;
  std::unique_ptr<store::Store> store_;  // set with --db
  std::optional<DaemonClient> client_;   // set otherwise
};

// One series of a metric's rows (one name): the mean of the workers' values at each step
// (equal for sync replicas), as (step, value) by step.
std::vector<std::pair<double, double>> MeanByStep(std::span<const store::MetricRow> rows);

}  // namespace dtrain::cli
