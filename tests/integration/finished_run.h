// A job run to its end through `dtrain run` (its embedded coordinator, real worker processes)
// and what its store then holds: the newest checkpoint, each worker's last evaluation, the largest
// value of each metric, the workers and the log.
//
//   TempDir dir;
//   const Finished f = RunJob(dir, "ring", job_text);   // fails the test unless it succeeded
//   BOOST_TEST(f.eval_loss.at(0) < 0.6);
//
// One thread at a time per TempDir.
#pragma once

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "daemon/store/store.h"
#include "integration/daemon_fixture.h"

namespace dtrain::testing {

struct Finished {
  ProcessResult run;
  std::vector<float> params;                 // the job's newest checkpoint
  std::vector<std::vector<std::uint64_t>> clocks;  // its version vectors (async)
  std::map<int, double> eval_loss;           // the last eval_loss of each worker
  std::map<std::string, double> worst;       // the largest value of each metric, any worker
  std::vector<store::WorkerRecord> workers;
  std::vector<store::LogRow> logs;
};

inline Finished RunJob(const TempDir& dir, const std::string& name, const std::string& text) {
  Finished f;
  const std::string db = dir.Path(name + ".db");
  f.run = RunProcess({EnvPath("DTRAIN_BIN"), "run", dir.Write(name + ".toml", text), "--db", db,
                      "--json"},
                     dir.Path(""));
  BOOST_TEST_INFO(name << ": " << f.run.err);
  BOOST_REQUIRE_EQUAL(f.run.exit_code, 0);
  auto store = store::Store::Open(db);
  BOOST_REQUIRE(store.ok());
  auto latest = store.value()->LatestCheckpoint(1);
  BOOST_REQUIRE(latest.ok() && latest.value().checkpoint.has_value());
  f.params.assign(latest.value().checkpoint->params.begin(),
                  latest.value().checkpoint->params.end());
  f.clocks = latest.value().checkpoint->clocks;
  auto metrics = store.value()->Metrics(1, "");
  BOOST_REQUIRE(metrics.ok());
  for (const store::MetricRow& m : metrics.value()) {
    if (m.name == "eval_loss") f.eval_loss[m.worker] = m.value;
    auto [it, fresh] = f.worst.emplace(m.name, m.value);
    if (!fresh) it->second = std::max(it->second, m.value);
  }
  auto workers = store.value()->Workers(1);
  BOOST_REQUIRE(workers.ok());
  f.workers = workers.value();
  auto logs = store.value()->Logs(1);
  BOOST_REQUIRE(logs.ok());
  f.logs = logs.value();
  return f;
}

// How many of the job's log lines are exactly `line`.
inline long CountLines(const Finished& f, const std::string& line) {
  return std::count_if(f.logs.begin(), f.logs.end(),
                       [&](const store::LogRow& row) { return row.line == line; });
}

inline void CheckReplicasAgree(const Finished& f, int workers) {
  BOOST_REQUIRE_EQUAL(f.eval_loss.size(), static_cast<std::size_t>(workers));
  for (const auto& [rank, loss] : f.eval_loss) {
    BOOST_TEST(loss == f.eval_loss.at(0), "worker " << rank << " evaluates differently");
  }
}

}  // namespace dtrain::testing
