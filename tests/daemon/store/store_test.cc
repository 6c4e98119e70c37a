#include "daemon/store/store.h"

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <limits>
#include <cmath>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "daemon/store/store_test_util.h"

namespace dtrain::store {
namespace store_test {

using testing::Contains;
using testing::OpenRaw;
using testing::OpenStore;
using testing::SameBits;
using testing::SampleCheckpoint;
using testing::SampleJob;
using testing::TempStoreDir;

std::vector<train::MetricPoint> Points(std::int64_t first_step, int count,
                                       const std::string& name) {
  std::vector<train::MetricPoint> points;
  for (int i = 0; i < count; ++i) {
    points.push_back({first_step + i, 0.25 * static_cast<double>(first_step + i), name,
                      static_cast<double>(first_step + i) / 2});
  }
  return points;
}

// Overwrites one byte in the middle of a stored checkpoint blob, behind the store's back.
void FlipStoredByte(const std::string& path, std::int64_t job, std::int64_t step) {
  Database db = OpenRaw(path);
  Result<Statement> select =
      db.Prepare("SELECT blob FROM checkpoints WHERE job = ?1 AND step = ?2");
  BOOST_REQUIRE(select.ok());
  select.value().BindInt(1, job).BindInt(2, step);
  BOOST_REQUIRE(select.value().Step().value());
  std::string blob(select.value().ColumnBlob(0));
  blob[blob.size() / 2] = static_cast<char>(blob[blob.size() / 2] ^ 0x01);
  Result<Statement> update =
      db.Prepare("UPDATE checkpoints SET blob = ?3 WHERE job = ?1 AND step = ?2");
  BOOST_REQUIRE(update.ok());
  update.value().BindInt(1, job).BindInt(2, step).BindBlob(3, blob);
  BOOST_REQUIRE(update.value().Run().ok());
}

struct StoreFixture {
  TempStoreDir dir;
  std::string path = dir.Path("dtrain.db");
  std::unique_ptr<Store> store = OpenStore(path);
  std::int64_t NewJob(const std::string& name = "job") {
    Result<std::int64_t> id = store->CreateJob(SampleJob(name));
    BOOST_REQUIRE_MESSAGE(id.ok(), id.status().message());
    return id.value();
  }
};

BOOST_FIXTURE_TEST_SUITE(run_store, StoreFixture)

BOOST_AUTO_TEST_CASE(job_creation_and_state_changes_round_trip_with_events) {
  const std::int64_t id = NewJob("mnist");
  Result<JobRecord> job = store->GetJob(id);
  BOOST_REQUIRE(job.ok());
  BOOST_TEST(job.value().id == id);
  BOOST_TEST(job.value().name == "mnist");
  BOOST_TEST(job.value().owner_uid == 1000);
  BOOST_TEST(job.value().owner_gid == 1001);
  BOOST_TEST(job.value().priority == 5);
  BOOST_TEST(job.value().spec_toml == SampleJob("x").spec_toml);
  BOOST_TEST((job.value().state == JobState::kQueued));
  BOOST_TEST(job.value().reason == "submitted");
  BOOST_TEST(job.value().created > 1.6e9);

  BOOST_REQUIRE(store->SetJobState(id, JobState::kStarting, "placed on host a").ok());
  BOOST_REQUIRE(store->SetJobState(id, JobState::kRunning, "4 workers up").ok());
  BOOST_REQUIRE(store->SetJobState(id, JobState::kRecovering, "worker 2 killed by SIGKILL").ok());
  BOOST_REQUIRE(store->SetJobState(id, JobState::kRunning, "resumed from step 300").ok());
  BOOST_REQUIRE(store->SetJobState(id, JobState::kSucceeded, "12 epochs done").ok());

  job = store->GetJob(id);
  BOOST_TEST((job.value().state == JobState::kSucceeded));
  BOOST_TEST(job.value().reason == "12 epochs done");
  BOOST_TEST(job.value().updated >= job.value().created);

  Result<std::vector<EventRecord>> events = store->Events(id);
  BOOST_REQUIRE(events.ok());
  BOOST_REQUIRE(events.value().size() == 6u);
  const auto& e = events.value();
  BOOST_TEST(!e[0].from.has_value());
  BOOST_TEST((e[0].to == JobState::kQueued));
  BOOST_TEST(e[0].reason == "submitted");
  const JobState lifecycle[] = {JobState::kQueued,     JobState::kStarting, JobState::kRunning,
                                JobState::kRecovering, JobState::kRunning,  JobState::kSucceeded};
  for (std::size_t i = 1; i < e.size(); ++i) {
    BOOST_TEST(e[i].job == id);
    BOOST_TEST((e[i].from == lifecycle[i - 1]));
    BOOST_TEST((e[i].to == lifecycle[i]));
    BOOST_TEST(e[i].time >= e[i - 1].time);
  }
  BOOST_TEST(e[3].reason == "worker 2 killed by SIGKILL");
}

BOOST_AUTO_TEST_CASE(invalid_transitions_are_refused_and_leave_no_event) {
  const std::int64_t id = NewJob();
  BOOST_REQUIRE(store->SetJobState(id, JobState::kCancelled, "user asked").ok());
  Status late = store->SetJobState(id, JobState::kSucceeded, "finished anyway");
  BOOST_REQUIRE(!late.ok());
  BOOST_TEST(late.message() ==
             "job " + std::to_string(id) + ": cannot go from cancelled to succeeded");
  BOOST_TEST((store->GetJob(id).value().state == JobState::kCancelled));
  BOOST_TEST(store->Events(id).value().size() == 2u);

  Status missing = store->SetJobState(424242, JobState::kStarting, "x");
  BOOST_TEST(missing.message() == "job 424242: no job 424242");
  BOOST_TEST(store->GetJob(424242).status().message() == "no job 424242");
}

BOOST_AUTO_TEST_CASE(list_jobs_returns_every_job_by_id) {
  const std::int64_t a = NewJob("a");
  const std::int64_t b = NewJob("b");
  BOOST_REQUIRE(store->SetJobState(b, JobState::kStarting, "go").ok());
  Result<std::vector<JobRecord>> jobs = store->ListJobs();
  BOOST_REQUIRE(jobs.ok());
  BOOST_REQUIRE(jobs.value().size() == 2u);
  BOOST_TEST(jobs.value()[0].id == a);
  BOOST_TEST(jobs.value()[1].name == "b");
  BOOST_TEST((jobs.value()[1].state == JobState::kStarting));
}

BOOST_AUTO_TEST_CASE(appends_from_many_threads_land_exactly_once_in_order) {
  const std::int64_t id = NewJob();
  constexpr int kThreads = 4;
  constexpr int kSteps = 3000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int step = 0; step < kSteps;) {
        const int chunk = 1 + (step + t) % 7;  // batches of varying sizes
        const int n = std::min(chunk, kSteps - step);
        std::vector<train::MetricPoint> points = Points(step, n, "train_loss");
        store->AppendMetrics(id, t, points);
        for (int i = 0; i < n; ++i) {
          store->AppendLog(id, t, "stdout", "line " + std::to_string(step + i));
        }
        step += n;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  Status flushed = store->Flush();
  BOOST_REQUIRE_MESSAGE(flushed.ok(), flushed.message());

  Result<std::vector<MetricRow>> metrics = store->Metrics(id, "");
  BOOST_REQUIRE(metrics.ok());
  BOOST_REQUIRE(metrics.value().size() == static_cast<std::size_t>(kThreads * kSteps));
  std::map<int, std::vector<std::int64_t>> steps_by_worker;
  std::int64_t previous_step = -1;
  for (const MetricRow& row : metrics.value()) {
    BOOST_REQUIRE(row.step >= previous_step);  // ordered by step
    previous_step = row.step;
    steps_by_worker[row.worker].push_back(row.step);
    BOOST_REQUIRE(row.value == static_cast<double>(row.step) / 2);
    BOOST_REQUIRE(row.epoch == 0.25 * static_cast<double>(row.step));
  }
  for (int t = 0; t < kThreads; ++t) {
    const auto& steps = steps_by_worker[t];
    BOOST_REQUIRE(steps.size() == static_cast<std::size_t>(kSteps));
    for (int i = 0; i < kSteps; ++i) BOOST_REQUIRE(steps[i] == i);
  }

  // Logs come back by id; each thread's lines must be in the order it appended them.
  std::vector<int> next_line(kThreads, 0);
  std::int64_t after = 0;
  std::size_t total = 0;
  for (;;) {
    Result<std::vector<LogRow>> page = store->Logs(id, after, 1000);
    BOOST_REQUIRE(page.ok());
    if (page.value().empty()) break;
    BOOST_REQUIRE(page.value().size() <= 1000u);
    for (const LogRow& row : page.value()) {
      BOOST_REQUIRE(row.id > after);
      after = row.id;
      BOOST_REQUIRE(row.stream == "stdout");
      BOOST_REQUIRE(row.line == "line " + std::to_string(next_line[row.worker]));
      ++next_line[row.worker];
      ++total;
    }
  }
  BOOST_TEST(total == static_cast<std::size_t>(kThreads * kSteps));
}

BOOST_AUTO_TEST_CASE(metric_queries_filter_by_name_and_step) {
  const std::int64_t id = NewJob();
  const std::int64_t other = NewJob();
  store->AppendMetrics(id, 0, Points(0, 10, "train_loss"));
  store->AppendMetrics(id, 0, Points(0, 10, "lr"));
  store->AppendMetrics(other, 0, Points(0, 10, "train_loss"));
  BOOST_REQUIRE(store->Flush().ok());
  Result<std::vector<MetricRow>> loss = store->Metrics(id, "train_loss", 6);
  BOOST_REQUIRE(loss.ok());
  BOOST_REQUIRE(loss.value().size() == 3u);
  BOOST_TEST(loss.value()[0].step == 7);
  BOOST_TEST(loss.value()[0].name == "train_loss");
  BOOST_TEST(loss.value()[0].time > 1.6e9);
  BOOST_TEST(store->Metrics(id, "").value().size() == 20u);
  BOOST_TEST(store->Metrics(id, "nope").value().empty());
}

// A loss that diverged is recorded as it was (SQLite keeps NaN as NULL), and the points
// recorded with it are kept too.
BOOST_AUTO_TEST_CASE(non_finite_metric_values_are_kept) {
  const std::int64_t id = NewJob();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<train::MetricPoint> points = {
      {1, 0.1, "train_loss", 2.5}, {2, 0.2, "train_loss", nan}, {3, 0.3, "train_loss", inf},
      {3, 0.3, "lr", 0.01}};
  store->AppendMetrics(id, 0, points);
  BOOST_REQUIRE(store->Flush().ok());
  const std::vector<MetricRow> loss = store->Metrics(id, "train_loss").value();
  BOOST_REQUIRE(loss.size() == 3u);
  BOOST_TEST(loss[0].value == 2.5);
  BOOST_TEST(std::isnan(loss[1].value));
  BOOST_TEST(std::isinf(loss[2].value));
  BOOST_TEST(store->LatestMetrics(id).value().size() == 2u);
}

BOOST_AUTO_TEST_CASE(appends_for_a_missing_job_are_dropped_without_stopping_the_writer) {
  const std::int64_t id = NewJob();
  store->AppendMetrics(id, 0, Points(0, 5, "a"));
  store->AppendMetrics(999999, 3, Points(0, 4, "b"));
  store->AppendLog(999999, 3, "stderr", "lost");
  store->AppendMetrics(id, 0, Points(5, 5, "a"));
  Status flushed = store->Flush();
  BOOST_REQUIRE(!flushed.ok());
  BOOST_TEST(Contains(flushed.message(), "5 appended row(s) were not stored"), flushed.message());
  BOOST_TEST(Contains(flushed.message(), "metric 'b' of job 999999 (worker 3)"), flushed.message());
  BOOST_TEST(Contains(flushed.message(), "FOREIGN KEY"), flushed.message());
  BOOST_TEST(store->Metrics(id, "a").value().size() == 10u);

  // The writer keeps going, and the report is not repeated.
  store->AppendLog(id, 0, "stdout", "still here");
  BOOST_TEST(store->Flush().ok());
  BOOST_TEST(store->Logs(id).value().size() == 1u);
  BOOST_TEST(store->SetJobState(id, JobState::kStarting, "go").ok());
}

BOOST_AUTO_TEST_CASE(readers_are_not_blocked_by_an_open_write_transaction) {
  const std::int64_t id = NewJob();
  store->AppendLog(id, 0, "stdout", "committed");
  BOOST_REQUIRE(store->Flush().ok());
  Database other = OpenRaw(path);
  BOOST_REQUIRE(other.Exec("BEGIN IMMEDIATE").ok());
  BOOST_REQUIRE(other
                    .Exec("INSERT INTO logs (job, worker, stream, time, line) VALUES (" +
                          std::to_string(id) + ", 0, 'stdout', 0, 'uncommitted')")
                    .ok());
  Result<std::vector<LogRow>> logs = store->Logs(id);
  Result<JobRecord> job = store->GetJob(id);
  BOOST_REQUIRE_MESSAGE(logs.ok(), logs.status().message());
  BOOST_REQUIRE(job.ok());
  BOOST_TEST(logs.value().size() == 1u);  // a consistent snapshot without the open transaction
  BOOST_REQUIRE(other.Exec("COMMIT").ok());
  BOOST_TEST(store->Logs(id).value().size() == 2u);
}

BOOST_AUTO_TEST_CASE(readers_run_while_the_writer_is_busy) {
  const std::int64_t id = NewJob();
  constexpr int kPoints = 100000;
  std::atomic<bool> writing{true};
  std::thread writer([&] {
    for (int first = 0; first < kPoints; first += 500) {
      store->AppendMetrics(id, 0, Points(first, 500, "train_loss"));
    }
    BOOST_CHECK(store->Flush().ok());
    writing = false;
  });
  std::size_t seen = 0;
  int reads = 0;
  bool all_ok = true;
  bool monotonic = true;
  while (writing || reads == 0) {
    Result<std::vector<MetricRow>> rows = store->Metrics(id, "train_loss", kPoints - 1000);
    Result<std::vector<MetricRow>> all = store->Metrics(id, "");
    all_ok = all_ok && rows.ok() && all.ok();
    if (!all.ok()) break;
    monotonic = monotonic && all.value().size() >= seen;
    seen = all.value().size();
    ++reads;
  }
  writer.join();
  BOOST_TEST(all_ok);
  BOOST_TEST(monotonic);
  BOOST_TEST(store->Metrics(id, "").value().size() == static_cast<std::size_t>(kPoints));
  BOOST_TEST_MESSAGE(reads << " reads while 100k metric rows were written");
}

BOOST_AUTO_TEST_CASE(appending_100k_metric_points_in_one_call_lands_every_row) {
  const std::int64_t id = NewJob();
  const std::vector<train::MetricPoint> points = Points(0, 100000, "train_loss");
  const auto start = std::chrono::steady_clock::now();
  store->AppendMetrics(id, 0, points);
  BOOST_REQUIRE(store->Flush().ok());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST_MESSAGE("100k metric points appended and committed in " << seconds << " s");
  BOOST_TEST(store->Metrics(id, "").value().size() == 100000u);
  BOOST_TEST(store->Metrics(id, "train_loss", 99989).value().size() == 10u);
}

BOOST_AUTO_TEST_CASE(worker_starts_and_exits_are_recorded) {
  const std::int64_t id = NewJob();
  const std::int64_t w0 = store->RecordWorkerStart(id, 0, "replica", "host-a", 4242).value();
  const std::int64_t w1 = store->RecordWorkerStart(id, 1, "replica", "host-b", 4343).value();
  BOOST_REQUIRE(store->RecordWorkerExit(w0, 0, 0).ok());
  BOOST_REQUIRE(store->RecordWorkerExit(w1, 0, 9).ok());
  Status twice = store->RecordWorkerExit(w1, 1, 0);
  BOOST_TEST(twice.message() ==
             "worker record " + std::to_string(w1) + ": no running worker with that id");
  BOOST_TEST(!store->RecordWorkerStart(777777, 0, "replica", "h", 1).ok());

  Result<std::vector<WorkerRecord>> workers = store->Workers(id);
  BOOST_REQUIRE(workers.ok());
  BOOST_REQUIRE(workers.value().size() == 2u);
  const WorkerRecord& a = workers.value()[0];
  const WorkerRecord& b = workers.value()[1];
  BOOST_TEST(a.id == w0);
  BOOST_TEST(a.host == "host-a");
  BOOST_TEST(a.pid == 4242);
  BOOST_TEST(a.role == "replica");
  BOOST_TEST((a.state == WorkerState::kExited));
  BOOST_TEST(a.exit_status.value() == 0);
  BOOST_TEST(!a.signal.has_value());
  BOOST_TEST(a.ended.value() >= a.started);
  BOOST_TEST(b.rank == 1);
  BOOST_TEST((b.state == WorkerState::kKilled));
  BOOST_TEST(b.signal.value() == 9);
  BOOST_TEST(!b.exit_status.has_value());
}

BOOST_AUTO_TEST_CASE(checkpoints_round_trip_and_keep_prunes_the_oldest) {
  const std::int64_t id = NewJob();
  for (std::int64_t step = 100; step <= 500; step += 100) {
    Status saved = store->SaveCheckpoint(id, SampleCheckpoint(step, 257), 3);
    BOOST_REQUIRE_MESSAGE(saved.ok(), saved.message());
  }
  Result<std::vector<CheckpointInfo>> infos = store->Checkpoints(id);
  BOOST_REQUIRE(infos.ok());
  BOOST_REQUIRE(infos.value().size() == 3u);
  const std::string blob = EncodeCheckpoint(SampleCheckpoint(300, 257));
  BOOST_TEST(infos.value()[0].step == 300);
  BOOST_TEST(infos.value()[0].bytes == static_cast<std::int64_t>(blob.size()));
  BOOST_TEST(infos.value()[0].checksum == StoredChecksum(blob).value());
  BOOST_TEST(infos.value()[2].step == 500);

  Result<LatestCheckpointResult> latest = store->LatestCheckpoint(id);
  BOOST_REQUIRE(latest.ok());
  BOOST_REQUIRE(latest.value().checkpoint.has_value());
  BOOST_TEST(SameBits(*latest.value().checkpoint, SampleCheckpoint(500, 257)));
  BOOST_TEST(latest.value().skipped.empty());
  BOOST_TEST(SameBits(store->LoadCheckpoint(id, 400).value(), SampleCheckpoint(400, 257)));
  BOOST_TEST(store->LoadCheckpoint(id, 100).status().message() ==
             "no checkpoint of job " + std::to_string(id) + " at step 100");

  // Saving a step again replaces it; a smaller keep prunes further.
  CheckpointData again = SampleCheckpoint(500, 3);
  BOOST_REQUIRE(store->SaveCheckpoint(id, again, 1).ok());
  infos = store->Checkpoints(id);
  BOOST_REQUIRE(infos.value().size() == 1u);
  BOOST_TEST(SameBits(store->LoadCheckpoint(id, 500).value(), again));
}

BOOST_AUTO_TEST_CASE(bad_checkpoint_saves_are_refused) {
  const std::int64_t id = NewJob();
  Status keep = store->SaveCheckpoint(id, SampleCheckpoint(1, 8), 0);
  BOOST_TEST(keep.message() == "checkpoint of job " + std::to_string(id) +
                                   " at step 1: keep must be at least 1, not 0");
  Status missing = store->SaveCheckpoint(31337, SampleCheckpoint(1, 8), 2);
  BOOST_TEST(missing.message() == "checkpoint of job 31337 at step 1: no job 31337");
  Result<LatestCheckpointResult> none = store->LatestCheckpoint(id);
  BOOST_REQUIRE(none.ok());
  BOOST_TEST(!none.value().checkpoint.has_value());
  BOOST_TEST(none.value().skipped.empty());
}

BOOST_AUTO_TEST_CASE(latest_checkpoint_skips_a_corrupted_newest_one) {
  const std::int64_t id = NewJob();
  for (std::int64_t step : {100, 200, 300}) {
    BOOST_REQUIRE(store->SaveCheckpoint(id, SampleCheckpoint(step, 1000), 5).ok());
  }
  FlipStoredByte(path, id, 300);

  Result<LatestCheckpointResult> latest = store->LatestCheckpoint(id);
  BOOST_REQUIRE(latest.ok());
  BOOST_REQUIRE(latest.value().checkpoint.has_value());
  BOOST_TEST(SameBits(*latest.value().checkpoint, SampleCheckpoint(200, 1000)));
  BOOST_REQUIRE(latest.value().skipped.size() == 1u);
  const std::string& skipped = latest.value().skipped[0];
  BOOST_TEST(Contains(skipped, "checkpoint of job " + std::to_string(id) +
                                   " at step 300: "
                                   "checksum mismatch"),
             skipped);

  Result<CheckpointData> direct = store->LoadCheckpoint(id, 300);
  BOOST_REQUIRE(!direct.ok());
  BOOST_TEST(Contains(direct.status().message(), "at step 300: checksum mismatch"));

  // A checksum column that disagrees with an intact blob is damage too.
  {
    Database db = OpenRaw(path);
    BOOST_REQUIRE(
        db.Exec(
              "UPDATE checkpoints SET checksum = (checksum | 1) - (checksum & 1) WHERE step = 200")
            .ok());
  }
  latest = store->LatestCheckpoint(id);
  BOOST_REQUIRE(latest.ok());
  BOOST_TEST(latest.value().checkpoint->step == 100);
  BOOST_REQUIRE(latest.value().skipped.size() == 2u);
  BOOST_TEST(Contains(latest.value().skipped[1], "at step 200: the checksum column says"),
             latest.value().skipped[1]);

  // Nothing verifies: no checkpoint, every one reported.
  {
    Database db = OpenRaw(path);
    BOOST_REQUIRE(db.Exec("UPDATE checkpoints SET blob = zeroblob(100) WHERE step = 100").ok());
  }
  latest = store->LatestCheckpoint(id);
  BOOST_REQUIRE(latest.ok());
  BOOST_TEST(!latest.value().checkpoint.has_value());
  BOOST_REQUIRE(latest.value().skipped.size() == 3u);
  BOOST_TEST(Contains(latest.value().skipped[2], "at step 100: not a checkpoint: bad magic"));
}

BOOST_AUTO_TEST_CASE(latest_metrics_are_the_newest_row_of_each_name) {
  const std::int64_t id = NewJob();
  const std::int64_t other = NewJob();
  store->AppendMetrics(id, 0, Points(0, 10, "train_loss"));
  store->AppendMetrics(id, 0, Points(0, 3, "eval_accuracy"));
  store->AppendMetrics(other, 0, Points(0, 50, "train_loss"));
  BOOST_REQUIRE(store->Flush().ok());
  Result<std::vector<MetricRow>> latest = store->LatestMetrics(id);
  BOOST_REQUIRE(latest.ok());
  BOOST_REQUIRE(latest.value().size() == 2u);
  BOOST_TEST(latest.value()[0].name == "eval_accuracy");
  BOOST_TEST(latest.value()[0].step == 2);
  BOOST_TEST(latest.value()[1].name == "train_loss");
  BOOST_TEST(latest.value()[1].step == 9);
  BOOST_TEST(latest.value()[1].value == 4.5);
  BOOST_TEST(store->LatestMetrics(12345).value().empty());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace store_test
}  // namespace dtrain::store
