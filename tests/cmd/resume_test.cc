// dtrain run --resume JOB on a --db store: --set changes what may change on resume (recorded in
// the store, honoured by the training) and refuses anything else; the Ctrl-C hint names --db;
// a --db that does not exist is not created. rm and prune on a --db store.
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cmd/run_checks.h"
#include "common/process.h"
#include "common/temp_dir.h"

namespace dtrain::cli {
namespace resume_test {

using namespace run_checks;
using dtrain::testing::ProcessResult;
using dtrain::testing::RunProcess;
using dtrain::testing::StartProcess;
using dtrain::testing::TempDir;

// 625 steps an epoch, a checkpoint every 50: 1000 epochs are minutes on any CPU, so a SIGINT sent
// after a checkpoint always lands mid-run.
constexpr const char* kJob = R"(name = "resumable"
[data]
format = "synthetic"
synthetic = "blobs"
rows = 20000
test_rows = 1000
features = 64
classes = 4
noise = 4.0
[model]
type = "mlp"
hidden = [128, 128]
activation = "relu"
[train]
epochs = 1000
batch_size = 32
seed = 5
[optimizer]
type = "adam"
lr = 0.001
schedule = "cosine"
[checkpoint]
every_steps = 50
)";

// Runs the job into `db` (with `more` arguments) and stops it with SIGINT after its first
// checkpoint; returns the step it stopped at.
std::int64_t RunAndInterrupt(const TempDir& dir, const std::string& job, const std::string& db,
                             const std::vector<std::string>& more = {}) {
  std::vector<std::string> argv = {Bin(), "run", job, "--db", db, "--json"};
  argv.insert(argv.end(), more.begin(), more.end());
  auto child = StartProcess(argv, dir.Path(""));
  WaitForCheckpoint(db, 1, 50);
  child.Signal(SIGINT);
  const ProcessResult stopped = child.Wait();
  BOOST_REQUIRE_MESSAGE(stopped.exit_code == 130, stopped.err);
  const nlohmann::json summary = ParseJson(stopped);
  // The hint names the store, which is not the default one.
  const std::string hint = "resume with dtrain run --resume 1 --db " + db;
  BOOST_TEST(summary["reason"].get<std::string>().find(hint) != std::string::npos,
             summary["reason"]);
  return summary["steps"].get<std::int64_t>();
}

BOOST_AUTO_TEST_SUITE(run_resume)

BOOST_AUTO_TEST_CASE(set_on_resume_applies_what_may_change_and_refuses_the_rest) {
  TempDir dir;
  const std::string job = dir.Write("job.toml", kJob);
  const std::string db = dir.Path("runs.db");
  const std::int64_t stopped_at = RunAndInterrupt(dir, job, db);
  std::string recorded;
  {
    auto s = OpenStore(db);
    recorded = s->GetJob(1).value().spec_toml;
  }

  // A key that shapes the checkpoint: refused, exit 2, naming it and what may change; nothing
  // changes in the store.
  const ProcessResult refused = RunProcess(
      {Bin(), "run", "--resume", "1", "--db", db, "--set", "train.batch_size=64", "--set",
       "train.epochs=2"},
      dir.Path(""));
  BOOST_TEST(refused.exit_code == 2, refused.err);
  BOOST_TEST(refused.err.find("train.batch_size") != std::string::npos, refused.err);
  BOOST_TEST(refused.err.find("train.epochs, train.steps") != std::string::npos, refused.err);
  {
    auto s = OpenStore(db);
    const store::JobRecord unchanged = s->GetJob(1).value();
    BOOST_TEST(unchanged.spec_toml == recorded);
    BOOST_TEST((unchanged.state == store::JobState::kCancelled));
  }

  // What may change: the run's length, the learning rate and its schedule.
  const std::int64_t until = stopped_at + 120;
  const ProcessResult resumed = RunProcess(
      {Bin(), "run", "--resume", "1", "--db", db, "--json", "--set",
       "train.steps=" + std::to_string(until), "--set", "optimizer.lr=0.01", "--set",
       "optimizer.schedule=constant"},
      dir.Path(""));
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  const nlohmann::json summary = ParseJson(resumed);
  BOOST_TEST(summary["resumed_from"].get<std::int64_t>() == stopped_at);
  BOOST_TEST(summary["steps"].get<std::int64_t>() == until);
  BOOST_TEST(Final(db, 1).step == until);

  auto s = OpenStore(db);
  const std::string spec = s->GetJob(1).value().spec_toml;
  BOOST_TEST(spec.find("steps = " + std::to_string(until)) != std::string::npos, spec);
  BOOST_TEST(spec.find("schedule = \"constant\"") != std::string::npos, spec);
  bool noted = false;
  const auto events = s->Events(1);
  BOOST_REQUIRE(events.ok());
  for (const store::EventRecord& e : events.value()) {
    noted |= e.reason.find("resumed with train.steps=") != std::string::npos;
  }
  BOOST_TEST(noted);
  // Every step after the checkpoint trained at the new learning rate.
  auto lr = s->Metrics(1, "lr", stopped_at);
  BOOST_REQUIRE(lr.ok());
  BOOST_TEST(!lr.value().empty());
  for (const store::MetricRow& m : lr.value()) {
    BOOST_TEST(m.value == static_cast<double>(0.01f), "step " << m.step);
  }
}

BOOST_AUTO_TEST_CASE(a_run_of_several_workers_stopped_by_ctrl_c_says_how_to_resume_it) {
  TempDir dir;
  const std::string job = dir.Write("job.toml", kJob);
  RunAndInterrupt(dir, job, dir.Path("workers.db"),
                  {"--set", "cluster.workers=2", "--set", "cluster.mode=sync"});
}

BOOST_AUTO_TEST_CASE(resume_on_a_missing_store_is_an_error_and_creates_nothing) {
  TempDir dir;
  const std::string db = dir.Path("typo.db");
  const ProcessResult r = RunProcess({Bin(), "run", "--resume", "3", "--db", db}, dir.Path(""));
  BOOST_TEST(r.exit_code == 4, r.err);
  BOOST_TEST(r.err.find(db + ": no such store file") != std::string::npos, r.err);
  BOOST_TEST(!std::filesystem::exists(db));
}

BOOST_AUTO_TEST_CASE(rm_and_prune_delete_from_a_store_file) {
  TempDir dir;
  const std::string job = dir.Write("quick.toml", R"(name = "quick"
[data]
format = "synthetic"
rows = 500
test_rows = 100
features = 4
[model]
type = "softmax"
[train]
epochs = 1
)");
  const std::string db = dir.Path("runs.db");
  for (int i = 0; i < 2; ++i) {
    BOOST_REQUIRE(RunProcess({Bin(), "run", job, "--db", db}, dir.Path("")).exit_code == 0);
  }
  const ProcessResult removed = RunProcess({Bin(), "rm", "1", "--db", db, "--json"}, dir.Path(""));
  BOOST_TEST(removed.exit_code == 0, removed.err);
  BOOST_TEST(ParseJson(removed)["removed"][0]["id"] == 1);
  BOOST_TEST(RunProcess({Bin(), "status", "1", "--db", db}, dir.Path("")).exit_code == 4);
  BOOST_TEST(RunProcess({Bin(), "rm", "7", "--db", db}, dir.Path("")).exit_code == 4);

  // Job 2 succeeded: not a failed one, and a dry run removes nothing.
  const ProcessResult failed = RunProcess(
      {Bin(), "prune", "--older-than", "0s", "--state", "failed", "--db", db, "--json"},
      dir.Path(""));
  BOOST_TEST(failed.exit_code == 0, failed.err);
  BOOST_TEST(ParseJson(failed)["removed"].empty());
  const ProcessResult dry = RunProcess(
      {Bin(), "prune", "--older-than", "0s", "--db", db, "--dry-run", "--json"}, dir.Path(""));
  BOOST_TEST(dry.exit_code == 0, dry.err);
  BOOST_TEST(ParseJson(dry)["removed"].size() == 1u);
  BOOST_TEST(ParseJson(dry)["dry_run"] == true);
  BOOST_TEST(RunProcess({Bin(), "status", "2", "--db", db}, dir.Path("")).exit_code == 0);

  const std::string missing = dir.Path("missing.db");
  BOOST_TEST(RunProcess({Bin(), "rm", "1", "--db", missing}, dir.Path("")).exit_code == 4);
  BOOST_TEST(!std::filesystem::exists(missing));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace resume_test
}  // namespace dtrain::cli
