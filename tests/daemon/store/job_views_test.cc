// The JOB object's pace (store/job_views.h): total_steps from a run's planned_steps (which is not
// among its metrics), steps per second since that point, and an ETA only while the job runs; and
// a sync run's epoch and the rows of it taken, from its epoch_rows and rows_per_epoch; the job's
// tags, and the newest jobs carrying every tag asked for; a Slurm job's grants.
#include "daemon/store/job_views.h"

#include <boost/test/unit_test.hpp>
#include <vector>

#include "daemon/store/store_test_util.h"

namespace dtrain::store {
namespace job_views_test {

using testing::OpenStore;
using testing::TempStoreDir;

MetricRow Row(std::int64_t step, const std::string& name, double value, double time,
              double epoch = 0.0) {
  return {.step = step, .worker = 0, .name = name, .value = value, .epoch = epoch, .time = time};
}

BOOST_AUTO_TEST_SUITE(job_views)

BOOST_AUTO_TEST_CASE(the_pace_counts_from_the_planned_steps_row) {
  // Resumed at step 100 at time 1000; step 300 recorded 40 s later: 5 steps/s, 100 steps left.
  const std::vector<MetricRow> latest = {Row(100, "planned_steps", 400, 1000.0),
                                         Row(300, "train_loss", 0.5, 1040.0),
                                         Row(200, "eval_loss", 0.6, 1030.0)};
  const nlohmann::json running = PaceJson(latest, 300, JobState::kRunning);
  BOOST_TEST(running["total_steps"] == 400, running.dump());
  BOOST_TEST(running["steps_per_sec"].get<double>() == 5.0, running.dump());
  BOOST_TEST(running["eta_seconds"].get<double>() == 20.0, running.dump());
  const nlohmann::json ended = PaceJson(latest, 300, JobState::kCancelled);
  BOOST_TEST(ended["total_steps"] == 400);
  BOOST_TEST(ended["eta_seconds"].is_null(), ended.dump());
}

BOOST_AUTO_TEST_CASE(no_planned_steps_or_no_step_since_leaves_the_unknown_null) {
  const nlohmann::json none = PaceJson({Row(50, "train_loss", 0.5, 10.0)}, 50, JobState::kRunning);
  BOOST_TEST(none["total_steps"].is_null(), none.dump());
  BOOST_TEST(none["steps_per_sec"].is_null(), none.dump());
  BOOST_TEST(none["eta_seconds"].is_null(), none.dump());
  const nlohmann::json started = PaceJson({Row(0, "planned_steps", 400, 10.0)}, 0,
                                          JobState::kRunning);
  BOOST_TEST(started["total_steps"] == 400, started.dump());
  BOOST_TEST(started["steps_per_sec"].is_null(), started.dump());
  BOOST_TEST(started["eta_seconds"].is_null(), started.dump());
}

BOOST_AUTO_TEST_CASE(a_stored_job_shows_its_total_steps_not_a_planned_steps_metric) {
  TempStoreDir dir;
  std::unique_ptr<Store> store = OpenStore(dir.Path("dtrain.db"));
  const std::int64_t id = testing::RunningJob(*store, "paced");
  const std::vector<train::MetricPoint> start = {{0, 0.0, "planned_steps", 4690}};
  store->AppendMetrics(id, 0, start);
  const std::vector<train::MetricPoint> later = {{100, 0.1, "train_loss", 0.7}};
  store->AppendMetrics(id, 0, later);
  BOOST_REQUIRE(store->Flush().ok());

  Result<nlohmann::json> job = StoredJobJson(*store, id, false);
  BOOST_REQUIRE_MESSAGE(job.ok(), job.status().message());
  BOOST_TEST(job.value()["step"] == 100, job.value().dump());
  BOOST_TEST(job.value()["total_steps"] == 4690, job.value().dump());
  BOOST_TEST(!job.value()["metrics"].contains("planned_steps"), job.value().dump());
  BOOST_TEST(job.value()["metrics"].contains("train_loss"), job.value().dump());
  const nlohmann::json progress = ProgressJson(job.value());
  BOOST_TEST(progress["total_steps"] == 4690, progress.dump());
  BOOST_TEST(progress["step"] == 100, progress.dump());
  BOOST_TEST(!progress.contains("workers"), progress.dump());
}

// A sync run's place in its data: the epoch of its last step (0-based), the rows of it taken.
BOOST_AUTO_TEST_CASE(the_epoch_is_that_of_the_last_step_with_the_rows_taken_of_it) {
  const MetricRow per_epoch = Row(0, "rows_per_epoch", 60000, 1.0);
  const nlohmann::json within = EpochJson({per_epoch, Row(1200, "epoch_rows", 33600, 9.0, 2.56)});
  BOOST_TEST(within["epoch"] == 2, within.dump());
  BOOST_TEST(within["epoch_rows"] == 33600, within.dump());
  BOOST_TEST(within["rows_per_epoch"] == 60000, within.dump());
  // The step that ended epoch 1 took its last rows: epoch 1 whole, not epoch 2 begun.
  const nlohmann::json ended = EpochJson({per_epoch, Row(938, "epoch_rows", 60000, 9.0, 2.0)});
  BOOST_TEST(ended["epoch"] == 1, ended.dump());
  BOOST_TEST(ended["epoch_rows"] == 60000, ended.dump());
  // An async run records neither: nothing is said.
  const nlohmann::json none = EpochJson({Row(50, "train_loss", 0.5, 10.0)});
  for (const char* key : {"epoch", "epoch_rows", "rows_per_epoch"}) {
    BOOST_TEST(none[key].is_null(), key << ": " << none.dump());
  }
}

BOOST_AUTO_TEST_CASE(a_stored_sync_job_shows_its_epoch_not_epoch_metrics) {
  TempStoreDir dir;
  std::unique_ptr<Store> store = OpenStore(dir.Path("dtrain.db"));
  const std::int64_t id = testing::RunningJob(*store, "epochs");
  const std::vector<train::MetricPoint> start = {{0, 0.0, "planned_steps", 938},
                                                 {0, 0.0, "rows_per_epoch", 60000}};
  store->AppendMetrics(id, 0, start);
  const std::vector<train::MetricPoint> later = {{100, 0.21, "train_loss", 0.7},
                                                 {100, 0.21, "epoch_rows", 12800}};
  store->AppendMetrics(id, 0, later);
  BOOST_REQUIRE(store->Flush().ok());
  Result<nlohmann::json> job = StoredJobJson(*store, id, false);
  BOOST_REQUIRE_MESSAGE(job.ok(), job.status().message());
  BOOST_TEST(job.value()["epoch"] == 0, job.value().dump());
  BOOST_TEST(job.value()["epoch_rows"] == 12800, job.value().dump());
  BOOST_TEST(job.value()["rows_per_epoch"] == 60000, job.value().dump());
  for (const char* name : {"epoch_rows", "rows_per_epoch", "planned_steps"}) {
    BOOST_TEST(!job.value()["metrics"].contains(name), name << ": " << job.value().dump());
  }
}

BOOST_AUTO_TEST_CASE(the_newest_jobs_are_those_carrying_every_tag_asked_for) {
  TempStoreDir dir;
  std::unique_ptr<Store> store = OpenStore(dir.Path("dtrain.db"));
  const auto create = [&](std::vector<std::string> tags) {
    JobRecord job = testing::SampleJob("tagged");
    job.tags = std::move(tags);
    return store->CreateJob(job).value();
  };
  const std::int64_t a = create({"sweep", "lr"});
  const std::int64_t b = create({"lr"});
  const std::int64_t c = create({});
  const std::int64_t d = create({"lr", "sweep", "x"});
  using Ids = std::vector<std::int64_t>;
  const std::vector<std::string> lr{"lr"}, both{"sweep", "lr"}, none;
  BOOST_TEST(NewestJobIds(*store, std::nullopt, 10, lr).value() == (Ids{d, b, a}),
             boost::test_tools::per_element());
  BOOST_TEST(NewestJobIds(*store, std::nullopt, 10, both).value() == (Ids{d, a}),
             boost::test_tools::per_element());
  BOOST_TEST(NewestJobIds(*store, std::nullopt, 10, none).value() == (Ids{d, c, b, a}),
             boost::test_tools::per_element());
  // The limit counts the jobs that match; a state narrows them further.
  BOOST_TEST(NewestJobIds(*store, std::nullopt, 1, both).value() == (Ids{d}),
             boost::test_tools::per_element());
  BOOST_REQUIRE(store->SetJobState(d, JobState::kCancelled, "test").ok());
  BOOST_TEST(NewestJobIds(*store, JobState::kQueued, 10, both).value() == (Ids{a}),
             boost::test_tools::per_element());

  const nlohmann::json job = StoredJobJson(*store, d, false).value();
  BOOST_TEST(job["tags"] == nlohmann::json({"lr", "sweep", "x"}), job.dump());
  BOOST_TEST(StoredJobJson(*store, c, false).value()["tags"] == nlohmann::json::array());
}

// An elastic Slurm job's status names every grant of its newest attempt: the attempt's
// allocation (worker null) and each further replica's, not those of the attempt before a restart;
// `slurm` stays the newest grant. A job Slurm never granted has neither.
BOOST_AUTO_TEST_CASE(a_slurm_job_shows_every_grant_of_its_newest_attempt) {
  TempStoreDir dir;
  std::unique_ptr<Store> store = OpenStore(dir.Path("dtrain.db"));
  const std::int64_t id = testing::RunningJob(*store, "elastic-on-slurm");
  for (const std::string& event :
       {SlurmGrantReason({4, "vm", std::nullopt}), SlurmGrantReason({5, "vm", 1}),
        std::string("restart 1 of 3: worker 0 killed by signal SIGKILL"),
        SlurmGrantReason({8, "node[3-4]", std::nullopt}), SlurmGrantReason({9, "node5", 2}),
        std::string("worker 2 lost at step 40, 2 carry on"), SlurmGrantReason({11, "node6", 3})}) {
    BOOST_REQUIRE(store->NoteEvent(id, event).ok());
  }
  const nlohmann::json job = StoredJobJson(*store, id, false).value();
  BOOST_TEST(job["slurm"] == nlohmann::json({{"job_id", 11}, {"nodes", "node6"}}), job.dump());
  const nlohmann::json grants = {{{"job_id", 8}, {"nodes", "node[3-4]"}, {"worker", nullptr}},
                                 {{"job_id", 9}, {"nodes", "node5"}, {"worker", 2}},
                                 {{"job_id", 11}, {"nodes", "node6"}, {"worker", 3}}};
  BOOST_TEST(job["slurm_grants"] == grants, job.dump());

  const std::int64_t other = testing::RunningJob(*store, "not-on-slurm");
  const nlohmann::json none = StoredJobJson(*store, other, false).value();
  BOOST_TEST(!none.contains("slurm"), none.dump());
  BOOST_TEST(!none.contains("slurm_grants"), none.dump());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace job_views_test
}  // namespace dtrain::store
