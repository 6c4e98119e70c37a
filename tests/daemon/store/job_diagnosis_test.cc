// DiagnoseJob over a real store file: the step a cause names counts what was recorded before it,
// in metrics and in checkpoints alike, and nothing recorded after it.
#include "daemon/store/job_diagnosis.h"

#include <signal.h>

#include <boost/test/unit_test.hpp>
#include <vector>

#include "daemon/store/store_test_util.h"

namespace dtrain::store {
namespace {

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

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace dtrain::store
