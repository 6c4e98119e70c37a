// The sweeps of the store: a sweep kept as submitted, its trials' jobs created with their rows in
// one transaction (a trial never has two jobs; a cancelled sweep gets no more), its end final,
// and a removed trial job leaving its row without a job. Reopening the file keeps it all.
#include <boost/test/unit_test.hpp>
#include <string>

#include "daemon/store/store.h"
#include "daemon/store/store_test_util.h"

namespace dtrain::store {
namespace sweeps_test {

using testing::OpenStore;
using testing::SampleJob;
using testing::TempStoreDir;

SweepRecord SampleSweep() {
  SweepRecord s;
  s.name = "lr";
  s.owner_uid = 1000;
  s.owner_gid = 1001;
  s.source = "sweeps/lr.sweep.toml";
  s.sweep_toml = "[sweep]\nmethod = \"grid\"\n";
  s.job_toml = "name = \"lr\"\n";
  s.base_dir = "sweeps";
  s.method = "grid";
  s.metric = "eval_accuracy";
  s.goal = "max";
  s.trials = 4;
  s.max_concurrent = 2;
  return s;
}

SweepTrialRecord Trial(std::int64_t sweep, std::int64_t index) {
  return {sweep, index, std::nullopt,
          R"([{"key":"optimizer.lr","toml":"0.1","json":"0.1","shown":"0.1"}])"};
}

BOOST_AUTO_TEST_SUITE(store_sweeps)

BOOST_AUTO_TEST_CASE(a_sweep_and_its_trials_are_kept_across_reopening) {
  TempStoreDir dir;
  const std::string path = dir.Path("dtrain.db");
  std::int64_t sweep = 0, job = 0;
  {
    std::unique_ptr<Store> store = OpenStore(path);
    Result<std::int64_t> created = store->CreateSweep(SampleSweep());
    BOOST_REQUIRE_MESSAGE(created.ok(), created.status().message());
    sweep = created.value();
    Result<std::int64_t> trial = store->CreateTrialJob(Trial(sweep, 1), SampleJob("lr-t1"));
    BOOST_REQUIRE_MESSAGE(trial.ok(), trial.status().message());
    job = trial.value();
  }
  std::unique_ptr<Store> store = OpenStore(path);
  const SweepRecord read = store->GetSweep(sweep).value();
  const SweepRecord want = SampleSweep();
  BOOST_TEST(read.id == sweep);
  BOOST_TEST(read.name == want.name);
  BOOST_TEST(read.owner_uid == want.owner_uid);
  BOOST_TEST(read.owner_gid == want.owner_gid);
  BOOST_TEST(read.source == want.source);
  BOOST_TEST(read.sweep_toml == want.sweep_toml);
  BOOST_TEST(read.job_toml == want.job_toml);
  BOOST_TEST(read.base_dir == want.base_dir);
  BOOST_TEST(read.method == "grid");
  BOOST_TEST(read.metric == "eval_accuracy");
  BOOST_TEST(read.goal == "max");
  BOOST_TEST(read.trials == 4);
  BOOST_TEST(read.max_concurrent == 2);
  BOOST_TEST((read.state == SweepState::kRunning));
  BOOST_TEST(store->ListSweeps().value().size() == 1u);

  const std::vector<SweepTrialRecord> trials = store->SweepTrials(sweep).value();
  BOOST_REQUIRE(trials.size() == 1u);
  BOOST_TEST(trials[0].trial == 1);
  BOOST_REQUIRE(trials[0].job.has_value());
  BOOST_TEST(*trials[0].job == job);
  BOOST_TEST(trials[0].parameters == Trial(sweep, 1).parameters);
  // The trial's job is an ordinary job.
  const JobRecord record = store->GetJob(job).value();
  BOOST_TEST(record.name == "lr-t1");
  BOOST_TEST((record.state == JobState::kQueued));
}

BOOST_AUTO_TEST_CASE(a_trial_gets_one_job_and_a_failed_creation_leaves_no_job) {
  TempStoreDir dir;
  std::unique_ptr<Store> store = OpenStore(dir.Path("dtrain.db"));
  const std::int64_t sweep = store->CreateSweep(SampleSweep()).value();
  BOOST_REQUIRE(store->CreateTrialJob(Trial(sweep, 0), SampleJob("t0")).ok());
  Result<std::int64_t> again = store->CreateTrialJob(Trial(sweep, 0), SampleJob("t0 again"));
  BOOST_TEST(!again.ok());
  BOOST_TEST(again.status().message().find("cannot create trial 0 of sweep") != std::string::npos,
             again.status().message());
  // The refused trial's job was rolled back with its row.
  BOOST_TEST(store->ListJobs().value().size() == 1u);
  BOOST_TEST(store->SweepTrials(sweep).value().size() == 1u);
  // No sweep: nothing created either.
  BOOST_TEST(!store->CreateTrialJob(Trial(sweep + 1, 0), SampleJob("orphan")).ok());
  BOOST_TEST(store->ListJobs().value().size() == 1u);
}

BOOST_AUTO_TEST_CASE(an_ended_sweep_is_final_and_gets_no_more_trials) {
  TempStoreDir dir;
  std::unique_ptr<Store> store = OpenStore(dir.Path("dtrain.db"));
  const std::int64_t sweep = store->CreateSweep(SampleSweep()).value();
  BOOST_REQUIRE(store->SetSweepState(sweep, SweepState::kCancelled, "cancelled by uid 1000").ok());
  const SweepRecord read = store->GetSweep(sweep).value();
  BOOST_TEST((read.state == SweepState::kCancelled));
  BOOST_TEST(read.reason == "cancelled by uid 1000");
  Result<std::int64_t> late = store->CreateTrialJob(Trial(sweep, 0), SampleJob("late"));
  BOOST_TEST(!late.ok());
  BOOST_TEST(late.status().message().find("the sweep is cancelled") != std::string::npos,
             late.status().message());
  BOOST_TEST(store->ListJobs().value().empty());
  const Status twice = store->SetSweepState(sweep, SweepState::kSucceeded, "done");
  BOOST_TEST(!twice.ok());
  BOOST_TEST(twice.message().find("it has ended (cancelled)") != std::string::npos,
             twice.message());
  BOOST_TEST(!store->GetSweep(sweep + 1).ok());
}

BOOST_AUTO_TEST_CASE(a_removed_trial_job_leaves_its_row_without_a_job) {
  TempStoreDir dir;
  std::unique_ptr<Store> store = OpenStore(dir.Path("dtrain.db"));
  const std::int64_t sweep = store->CreateSweep(SampleSweep()).value();
  const std::int64_t job = store->CreateTrialJob(Trial(sweep, 2), SampleJob("t2")).value();
  BOOST_REQUIRE(store->SetJobState(job, JobState::kCancelled, "cancelled").ok());
  BOOST_REQUIRE(store->DeleteJob(job).ok());
  const std::vector<SweepTrialRecord> trials = store->SweepTrials(sweep).value();
  BOOST_REQUIRE(trials.size() == 1u);
  BOOST_TEST(trials[0].trial == 2);
  BOOST_TEST(!trials[0].job.has_value());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace sweeps_test
}  // namespace dtrain::store
