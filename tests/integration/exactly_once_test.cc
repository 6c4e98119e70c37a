// Every training row exactly once per epoch, whatever happens to a synchronous job: a two-replica
// job over a CSV file whose rows carry shuffled ids, with each replica's rows recorded step by
// step (DTRAIN_RECORD_ROWS, daemon/runner/row_recorder.h), through a killed replica, then the
// other, then a killed daemon. Steps redone after a restart (those after the newest checkpoint)
// must take the very rows they took before, and per epoch the steps' rows, over both replicas,
// must be every id once: none twice, none missing.
#include <signal.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/temp_dir.h"
#include "integration/daemon_fixture.h"

namespace dtrain::testing {
namespace {

using json = nlohmann::json;

constexpr int kRows = 12000, kEpochs = 4, kGlobalBatch = 48;
constexpr int kStepsPerEpoch = kRows / kGlobalBatch;  // 250: the last batch is whole

// Row i of the file carries id ids[i]; two features and a label beside it. Returns the ids.
std::vector<int> WriteRowsWithIds(const std::string& path) {
  std::vector<int> ids(kRows);
  std::iota(ids.begin(), ids.end(), 0);
  std::mt19937 rng(7);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::ofstream out(path);
  out << "id,a,b,label\n";
  for (int i = 0; i < kRows; ++i) {
    const int label = ids[i] % 2;
    out << ids[i] << ',' << (label ? 1.5 : -1.5) + 0.001 * (i % 97) << ',' << 0.01 * (i % 13) << ','
        << label << '\n';
  }
  return ids;
}

// Set for the daemon (and so its jobs' processes) while a test runs.
struct RecordedRows {
  explicit RecordedRows(const std::string& prefix) {
    setenv("DTRAIN_RECORD_ROWS", prefix.c_str(), 1);
  }
  ~RecordedRows() { unsetenv("DTRAIN_RECORD_ROWS"); }
};

using StepKey = std::tuple<int, int, int>;  // epoch, batch, replica

// Every replica's recorded steps; a step recorded again must have taken the same rows.
std::map<StepKey, std::vector<int>> ReadRecords(const std::string& prefix) {
  std::map<StepKey, std::vector<int>> steps;
  for (int replica : {0, 1}) {
    std::ifstream in(prefix + "." + std::to_string(replica));
    BOOST_REQUIRE_MESSAGE(in, "replica " << replica << " recorded nothing");
    std::string line;
    int redone = 0;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      int epoch = -1, batch = -1, world = -1, position = -1;
      fields >> epoch >> batch >> world >> position;
      // A static job: every step trained by both replicas, each at its rank.
      BOOST_TEST(world == 2);
      BOOST_TEST(position == replica);
      std::vector<int> rows;
      for (int row; fields >> row;) rows.push_back(row);
      const auto [at, fresh] = steps.try_emplace({epoch, batch, replica}, rows);
      if (!fresh) {
        ++redone;
        BOOST_TEST(at->second == rows, "replica " << replica << " took other rows when it redid "
                                                  << "epoch " << epoch << " batch " << batch);
      }
    }
    BOOST_TEST_MESSAGE("replica " << replica << " redid " << redone << " steps");
  }
  return steps;
}

// The running replica `rank` of `job`'s newest attempt.
pid_t ReplicaPid(const json& job, int rank) {
  for (const json& w : job["workers"]) {
    if (w["state"] == "running" && w["rank"] == rank) return w["pid"].get<pid_t>();
  }
  BOOST_FAIL("no running replica " << rank << ": " << job.dump());
  return -1;
}

BOOST_AUTO_TEST_SUITE(exactly_once)

BOOST_AUTO_TEST_CASE(every_epoch_takes_every_row_once_through_killed_replicas_and_a_killed_daemon) {
  TempDir data;
  const std::vector<int> ids = WriteRowsWithIds(data.Path("rows.csv"));
  const std::string prefix = data.Path("taken");
  const RecordedRows recording(prefix);
  DaemonFixture d;
  const std::int64_t id = d.Submit(
      "name = \"exactly-once\"\n[data]\nformat = \"csv\"\ntrain = \"" + data.Path("rows.csv") +
      "\"\nlabel_column = \"label\"\nscale = \"standardize\"\n"
      "[model]\ntype = \"mlp\"\nhidden = [1024, 1024]\n"
      "[train]\nepochs = " +
      std::to_string(kEpochs) + "\nbatch_size = " + std::to_string(kGlobalBatch / 2) +
      "\nseed = 9\n[optimizer]\nlr = 0.01\n"
      "[cluster]\nworkers = 2\nmode = \"sync\"\n[checkpoint]\nevery_steps = 50\n"
      "[restart]\nmax_restarts = 5\n");

  // Replica 1 killed in the first epoch, replica 0 in the second, the daemon in the third. A
  // job's step moves at its checkpoints, where the replicas wait for the write: each kill comes a
  // little later, so that it usually finds steps past the checkpoint to redo (the messages say
  // how many were; the checks hold wherever a kill lands).
  const auto soon_after_step = [&](std::int64_t step) {
    const json job = d.WaitForStep(id, step);
    BOOST_REQUIRE_MESSAGE(job["state"] == "running", job.dump());
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    return job;
  };
  BOOST_REQUIRE(::kill(ReplicaPid(soon_after_step(60), 1), SIGKILL) == 0);
  d.WaitForRecovery(id, 4);
  BOOST_REQUIRE(::kill(ReplicaPid(soon_after_step(kStepsPerEpoch + 40), 0), SIGKILL) == 0);
  d.WaitForRecovery(id, 6);
  soon_after_step(2 * kStepsPerEpoch + 40);
  d.Stop(SIGKILL);
  d.Start();
  const json job = d.Wait(id);
  BOOST_REQUIRE_MESSAGE(job["state"] == "succeeded", job.dump() << d.LogTail(id));
  BOOST_TEST(job["step"] == kEpochs * kStepsPerEpoch);

  const std::map<StepKey, std::vector<int>> steps = ReadRecords(prefix);
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    BOOST_TEST_CONTEXT("epoch " << epoch) {
      std::vector<int> taken;
      for (int batch = 0; batch < kStepsPerEpoch; ++batch) {
        for (int replica : {0, 1}) {
          const auto step = steps.find({epoch, batch, replica});
          BOOST_TEST_REQUIRE((step != steps.end()),
                             "replica " << replica << " never took batch " << batch);
          for (int row : step->second) taken.push_back(ids.at(static_cast<std::size_t>(row)));
        }
      }
      std::sort(taken.begin(), taken.end());
      std::vector<int> every(kRows);
      std::iota(every.begin(), every.end(), 0);
      BOOST_TEST(taken == every);  // each id once: none twice, none missing
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace dtrain::testing
