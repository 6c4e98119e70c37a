// Store::DeleteJob, Store::Reclaim, Store::SetJobSpec and Store::RequeueJob on a real SQLite
// file, and which jobs prune selects.
#include "daemon/store/job_removal.h"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/store/schema.h"
#include "daemon/store/store.h"
#include "daemon/store/store_test_util.h"

namespace dtrain::store {
namespace job_removal_test {

using testing::OpenRaw;
using testing::OpenStore;
using testing::SampleCheckpoint;
using testing::SampleJob;
using testing::TempStoreDir;

// A job that ran and failed, with a checkpoint of `floats` floats and `lines` log lines of 1000
// bytes; its id.
std::int64_t FailedJobWithData(Store& store, std::size_t floats, int lines) {
  const std::int64_t id = store.CreateJob(SampleJob("big")).value();
  BOOST_REQUIRE(store.SetJobState(id, JobState::kStarting, "starting").ok());
  BOOST_REQUIRE(store.RecordWorkerStart(id, 0, "replica", "host", 42).ok());
  BOOST_REQUIRE(store.SetJobState(id, JobState::kRunning, "running").ok());
  const std::vector<train::MetricPoint> points = {{1, 0.0, "loss", 0.5}};
  store.AppendMetrics(id, 0, points);
  for (int i = 0; i < lines; ++i) store.AppendLog(id, 0, "stdout", std::string(1000, 'x'));
  BOOST_REQUIRE(store.SaveCheckpoint(id, SampleCheckpoint(10, floats), 1).ok());
  BOOST_REQUIRE(store.Flush().ok());
  BOOST_REQUIRE(store.SetJobState(id, JobState::kFailed, "failed").ok());
  return id;
}

std::uintmax_t FileBytes(const std::string& path) {
  std::error_code ignored;
  const std::uintmax_t size = std::filesystem::file_size(path, ignored);
  return ignored ? 0 : size;
}

BOOST_AUTO_TEST_SUITE(job_removal)

BOOST_AUTO_TEST_CASE(delete_refuses_an_unended_job_and_takes_all_of_an_ended_one) {
  TempStoreDir dir;
  auto store = OpenStore(dir.Path("dtrain.db"));
  const std::int64_t queued = store->CreateJob(SampleJob("queued")).value();
  const Result<JobRecord> refused = store->DeleteJob(queued);
  BOOST_REQUIRE(!refused.ok());
  BOOST_TEST(refused.status().message().find("queued, not ended") != std::string::npos);
  BOOST_TEST(store->GetJob(queued).ok());

  const std::int64_t id = FailedJobWithData(*store, 64, 3);
  const Result<JobRecord> deleted = store->DeleteJob(id);
  BOOST_REQUIRE_MESSAGE(deleted.ok(), deleted.status().message());
  BOOST_TEST(deleted.value().name == "big");
  BOOST_TEST((deleted.value().state == JobState::kFailed));
  BOOST_TEST(!store->GetJob(id).ok());
  BOOST_TEST(store->Events(id).value().empty());
  BOOST_TEST(store->Workers(id).value().empty());
  BOOST_TEST(store->Metrics(id, "").value().empty());
  BOOST_TEST(store->Logs(id).value().empty());
  BOOST_TEST(store->Checkpoints(id).value().empty());
  BOOST_TEST(!store->DeleteJob(id).ok());
  // Ids are never given again.
  BOOST_TEST(store->CreateJob(SampleJob("next")).value() > id);
}

BOOST_AUTO_TEST_CASE(reclaim_gives_the_space_back_and_the_file_shrinks) {
  TempStoreDir dir;
  const std::string path = dir.Path("dtrain.db");
  auto store = OpenStore(path);
  const std::int64_t kept = FailedJobWithData(*store, 1000, 10);
  const std::int64_t id = FailedJobWithData(*store, 256 * 1024, 2000);  // ~1 + ~2 MB
  BOOST_REQUIRE(store->Reclaim().ok());  // nothing free yet; the WAL is emptied
  const std::uintmax_t before = FileBytes(path);
  BOOST_REQUIRE(store->DeleteJob(id).ok());
  const Result<std::uint64_t> reclaimed = store->Reclaim();
  BOOST_REQUIRE_MESSAGE(reclaimed.ok(), reclaimed.status().message());
  BOOST_TEST(reclaimed.value() > 2'500'000u);
  BOOST_TEST(FileBytes(path) + reclaimed.value() == before);
  BOOST_TEST(FileBytes(path + "-wal") == 0u);
  BOOST_TEST(OpenRaw(path).QueryInt("PRAGMA freelist_count").value() == 0);
  BOOST_TEST(store->Logs(kept).value().size() == 10u);  // the other job is whole
  BOOST_TEST(store->LatestCheckpoint(kept).value().checkpoint.has_value());
}

BOOST_AUTO_TEST_CASE(a_store_made_without_incremental_vacuum_is_rewritten_once) {
  TempStoreDir dir;
  const std::string path = dir.Path("old.db");
  {  // A file as older versions made it: auto_vacuum off.
    Result<Database> db = Database::Open(path, Database::kCreate);
    BOOST_REQUIRE(db.ok());
    BOOST_REQUIRE(db.value().Exec("PRAGMA auto_vacuum = NONE").ok());
    BOOST_REQUIRE(Migrate(db.value(), StoreMigrations()).ok());
  }
  auto store = OpenStore(path);
  BOOST_TEST(OpenRaw(path).QueryInt("PRAGMA auto_vacuum").value() == 0);
  const std::int64_t id = FailedJobWithData(*store, 256 * 1024, 100);
  BOOST_REQUIRE(store->DeleteJob(id).ok());
  const Result<std::uint64_t> reclaimed = store->Reclaim();
  BOOST_REQUIRE_MESSAGE(reclaimed.ok(), reclaimed.status().message());
  BOOST_TEST(reclaimed.value() > 1'000'000u);
  BOOST_TEST(OpenRaw(path).QueryInt("PRAGMA auto_vacuum").value() == 2);  // incremental now
}

BOOST_AUTO_TEST_CASE(a_new_job_file_is_recorded_with_an_event_that_changes_no_state) {
  TempStoreDir dir;
  auto store = OpenStore(dir.Path("dtrain.db"));
  const std::int64_t id = FailedJobWithData(*store, 16, 0);
  BOOST_REQUIRE(store->SetJobSpec(id, "[train]\nepochs = 2\n", "resumed with train.epochs=2").ok());
  const JobRecord job = store->GetJob(id).value();
  BOOST_TEST(job.spec_toml == "[train]\nepochs = 2\n");
  BOOST_TEST((job.state == JobState::kFailed));
  const EventRecord last = store->Events(id).value().back();
  BOOST_TEST(last.reason == "resumed with train.epochs=2");
  BOOST_TEST((last.from == JobState::kFailed && last.to == JobState::kFailed));
  BOOST_TEST(!store->SetJobSpec(id + 1, "", "x").ok());
}

// A resume with settings, or an ASHA promotion: the new job file and the queued state together.
BOOST_AUTO_TEST_CASE(a_requeue_changes_the_job_file_and_the_state_in_one_transaction) {
  TempStoreDir dir;
  auto store = OpenStore(dir.Path("dtrain.db"));
  const std::int64_t id = FailedJobWithData(*store, 16, 0);
  BOOST_REQUIRE(store->RequeueJob(id, "promoted", "[train]\nsteps = 6\n", "with steps=6").ok());
  const JobRecord job = store->GetJob(id).value();
  BOOST_TEST(job.spec_toml == "[train]\nsteps = 6\n");
  BOOST_TEST((job.state == JobState::kQueued));
  BOOST_TEST(job.reason == "promoted");
  const std::vector<EventRecord> events = store->Events(id).value();
  BOOST_REQUIRE(events.size() >= 2u);
  BOOST_TEST(events[events.size() - 2].reason == "with steps=6");
  BOOST_TEST((events.back().from == JobState::kFailed && events.back().to == JobState::kQueued));
  // Not ended: refused, and neither the file nor the state changes.
  BOOST_TEST(!store->RequeueJob(id, "again", "[train]\nsteps = 18\n", "x").ok());
  BOOST_TEST(store->GetJob(id).value().spec_toml == "[train]\nsteps = 6\n");
  BOOST_TEST(store->Events(id).value().size() == events.size());
  // Without a new file, only the state.
  BOOST_REQUIRE(store->SetJobState(id, JobState::kCancelled, "stopped").ok());
  BOOST_REQUIRE(store->RequeueJob(id, "resumed").ok());
  BOOST_TEST(store->GetJob(id).value().spec_toml == "[train]\nsteps = 6\n");
  BOOST_TEST(store->Events(id).value().size() == events.size() + 2);
}

BOOST_AUTO_TEST_CASE(prune_selects_ended_jobs_by_age_state_and_owner) {
  JobRecord job;
  job.state = JobState::kFailed;
  job.updated = 100;
  job.owner_uid = 1000;
  BOOST_TEST(Prunable(job, {200, {}, std::nullopt}));
  BOOST_TEST(!Prunable(job, {100, {}, std::nullopt}));  // not older
  BOOST_TEST(Prunable(job, {200, {JobState::kCancelled, JobState::kFailed}, 1000}));
  BOOST_TEST(!Prunable(job, {200, {JobState::kSucceeded}, std::nullopt}));
  BOOST_TEST(!Prunable(job, {200, {}, 1001}));  // another user's
  job.state = JobState::kRunning;
  BOOST_TEST(!Prunable(job, {200, {JobState::kRunning}, std::nullopt}));
  BOOST_TEST(ParseEndedState("cancelled").ok());
  BOOST_TEST(!ParseEndedState("running").ok());
  BOOST_TEST(ParseEndedState("bogus").status().message().find("succeeded, failed, cancelled") !=
             std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace job_removal_test
}  // namespace dtrain::store
