// The JOB object's pace (store/job_views.h): total_steps from a run's planned_steps (which is not
// among its metrics), steps per second since that point, and an ETA only while the job runs.
#include "daemon/store/job_views.h"

#include <boost/test/unit_test.hpp>
#include <vector>

#include "daemon/store/store_test_util.h"

namespace dtrain::store {
namespace {

using testing::OpenStore;
using testing::TempStoreDir;

MetricRow Row(std::int64_t step, const std::string& name, double value, double time) {
  return {.step = step, .worker = 0, .name = name, .value = value, .epoch = 0.0, .time = time};
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

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace dtrain::store
