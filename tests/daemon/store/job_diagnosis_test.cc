// DiagnoseJob over a real store file: the step a cause names counts what was recorded before it,
// in metrics and in checkpoints alike (pruned ones too), and nothing recorded after it; a failed
// process's last lines are its attempt's only; a sparse model left all zeros is named.
#include "daemon/store/job_diagnosis.h"

#include <signal.h>

#include <boost/test/unit_test.hpp>
#include <vector>

#include "daemon/store/store_test_util.h"

namespace dtrain::store {
namespace job_diagnosis_test {

using testing::OpenStore;
using testing::SampleCheckpoint;
using testing::SampleJob;
using testing::TempStoreDir;

BOOST_AUTO_TEST_SUITE(job_diagnosis)

BOOST_AUTO_TEST_CASE(a_killed_process_is_placed_at_the_checkpoint_it_outlived) {
  TempStoreDir dir;
  std::unique_ptr<Store> store = OpenStore(dir.Path("dtrain.db"));
  const std::int64_t id = store->CreateJob(SampleJob("ckpt-before-metrics")).value();
  BOOST_REQUIRE(store->SetJobState(id, JobState::kStarting, "starting").ok());
  BOOST_REQUIRE(store->SetJobState(id, JobState::kRunning, "running").ok());
  const std::int64_t worker = store->RecordWorkerStart(id, 1, "replica", "host-a", 4242).value();
  const std::vector<train::MetricPoint> early = {{20, 0.1, "loss", 1.5}};
  store->AppendMetrics(id, 1, early);
  // Checkpoints every 50 steps, metrics every 100: only the checkpoint shows step 50.
  BOOST_REQUIRE(store->SaveCheckpoint(id, SampleCheckpoint(50, 16), 3).ok());
  BOOST_REQUIRE(store->RecordWorkerExit(worker, 0, SIGKILL).ok());
  BOOST_REQUIRE(store->SaveCheckpoint(id, SampleCheckpoint(100, 16), 3).ok());  // a later attempt
  const std::vector<train::MetricPoint> late = {{150, 0.5, "loss", 0.5}};
  store->AppendMetrics(id, 1, late);
  BOOST_REQUIRE(store->Flush().ok());

  Result<nlohmann::json> why = DiagnoseJob(*store, id, 10);
  BOOST_REQUIRE_MESSAGE(why.ok(), why.status().message());
  const nlohmann::json& cause = why.value()["cause"];
  BOOST_TEST(cause["kind"] == "process", why.value().dump());
  BOOST_TEST(cause["step"] == 50, why.value().dump());
  BOOST_TEST(why.value()["step"] == 150, why.value().dump());
  BOOST_TEST(why.value()["newest_checkpoint"] == 100, why.value().dump());
}

// A running job with one worker of rank 1 (started); its id and the worker's handle.
std::pair<std::int64_t, std::int64_t> JobWithWorker(Store& store, const std::string& name) {
  const std::int64_t id = testing::RunningJob(store, name);
  return {id, store.RecordWorkerStart(id, 1, "replica", "host-a", 4242).value()};
}

BOOST_AUTO_TEST_CASE(a_killed_process_keeps_its_step_when_that_checkpoint_is_pruned) {
  TempStoreDir dir;
  std::unique_ptr<Store> store = OpenStore(dir.Path("dtrain.db"));
  const auto [id, worker] = JobWithWorker(*store, "pruned");
  const std::vector<train::MetricPoint> early = {{20, 0.1, "loss", 1.5}};
  store->AppendMetrics(id, 1, early);
  BOOST_REQUIRE(store->SaveCheckpoint(id, SampleCheckpoint(50, 16), 1).ok());
  BOOST_REQUIRE(store->RecordWorkerExit(worker, 0, SIGKILL).ok());
  // The next attempt keeps one checkpoint: step 50's is gone.
  BOOST_REQUIRE(store->SaveCheckpoint(id, SampleCheckpoint(100, 16), 1).ok());
  BOOST_REQUIRE(store->Flush().ok());
  BOOST_REQUIRE(store->Checkpoints(id).value().size() == 1u);

  Result<nlohmann::json> why = DiagnoseJob(*store, id, 10);
  BOOST_REQUIRE_MESSAGE(why.ok(), why.status().message());
  BOOST_TEST(why.value()["cause"]["step"] == 50, why.value().dump());
  const std::string summary = why.value()["cause"]["summary"];
  BOOST_TEST(summary.find("at step 50") != std::string::npos, summary);
}

BOOST_AUTO_TEST_CASE(a_failed_process_s_last_lines_leave_out_the_next_attempt_s) {
  TempStoreDir dir;
  std::unique_ptr<Store> store = OpenStore(dir.Path("dtrain.db"));
  const auto [id, worker] = JobWithWorker(*store, "attempts");
  store->AppendLog(id, 1, "stdout", "step 40 of the first attempt");
  BOOST_REQUIRE(store->Flush().ok());
  BOOST_REQUIRE(store->RecordWorkerExit(worker, 0, SIGKILL).ok());
  // Restarted within kPeerDeathSeconds: its first line is not the killed process's.
  store->RecordWorkerStart(id, 1, "replica", "host-a", 4343).value();
  store->AppendLog(id, 1, "stdout", "resuming from step 0: the second attempt");
  BOOST_REQUIRE(store->Flush().ok());

  Result<nlohmann::json> why = DiagnoseJob(*store, id, 10);
  BOOST_REQUIRE_MESSAGE(why.ok(), why.status().message());
  const nlohmann::json& lines = why.value()["last_lines"];
  BOOST_REQUIRE_MESSAGE(lines.size() == 1u, why.value().dump());
  BOOST_TEST(lines[0]["line"] == "step 40 of the first attempt");
}

BOOST_AUTO_TEST_CASE(a_model_left_all_zeros_is_named_with_l1) {
  TempStoreDir dir;
  std::unique_ptr<Store> store = OpenStore(dir.Path("dtrain.db"));
  const auto [id, worker] = JobWithWorker(*store, "zeros");
  const std::vector<train::MetricPoint> end = {{90, 1.0, "eval_auc", 0.5},
                                               {90, 1.0, "nonzero_weights", 0.0}};
  store->AppendMetrics(id, 0, end);
  BOOST_REQUIRE(store->RecordWorkerExit(worker, 0, 0).ok());
  BOOST_REQUIRE(store->SetJobState(id, JobState::kSucceeded, "completed 90 steps").ok());
  BOOST_REQUIRE(store->Flush().ok());

  Result<nlohmann::json> why = DiagnoseJob(*store, id, 10);
  BOOST_REQUIRE_MESSAGE(why.ok(), why.status().message());
  BOOST_TEST(why.value()["cause"]["kind"] == "none", why.value().dump());
  bool named = false;
  for (const nlohmann::json& next : why.value()["next"]) {
    named = named || (next.get<std::string>().find("all zeros") != std::string::npos &&
                      next.get<std::string>().find("optimizer.l1") != std::string::npos);
  }
  BOOST_TEST(named, why.value().dump());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace job_diagnosis_test
}  // namespace dtrain::store
