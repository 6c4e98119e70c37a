// Crash safety: a child process uses the store and is killed with SIGKILL; the parent reopens
// the file and checks that every acknowledged durable operation survived intact.
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/process.h"
#include "daemon/store/store.h"
#include "daemon/store/store_test_util.h"

namespace dtrain::store {
namespace durability_test {

using dtrain::testing::ReadAll;
using dtrain::testing::WriteAll;
using testing::OpenRaw;
using testing::OpenStore;
using testing::SameBits;
using testing::SampleCheckpoint;
using testing::SampleJob;
using testing::TempStoreDir;

constexpr std::size_t kFloats = 20000;

// false at end of file (the writer is gone) or on error.
bool ReadValue(int fd, std::int64_t* value) { return ReadAll(fd, value, sizeof *value); }

// The child: creates a job, then saves checkpoints 1, 2, 3, ... (keep 3), acknowledging each
// job id and step on `ack` only after the store returned; between saves it keeps the writer
// busy with metrics and logs, so the kill lands mid-work. Never returns to the test framework.
[[noreturn]] void RunChild(const std::string& path, int ack) {
  Result<std::unique_ptr<Store>> opened = Store::Open(path);
  if (!opened.ok()) ::_exit(2);
  Store& store = *opened.value();
  Result<std::int64_t> job = store.CreateJob(SampleJob("crash"));
  if (!job.ok() || !WriteAll(ack, &job.value(), sizeof job.value())) ::_exit(3);
  std::vector<train::MetricPoint> points(200, train::MetricPoint{0, 0.0, "train_loss", 1.0});
  for (std::int64_t step = 1; step < 100000; ++step) {
    if (!store.SaveCheckpoint(job.value(), SampleCheckpoint(step, kFloats), 3).ok()) ::_exit(4);
    if (!WriteAll(ack, &step, sizeof step)) ::_exit(5);
    store.AppendMetrics(job.value(), 0, points);
    store.AppendLog(job.value(), 0, "stdout", "step " + std::to_string(step));
  }
  ::_exit(6);  // the parent should have killed us long before
}

BOOST_AUTO_TEST_SUITE(store_durability)

BOOST_AUTO_TEST_CASE(acknowledged_job_and_checkpoints_survive_sigkill) {
  TempStoreDir dir;
  const std::string path = dir.Path("dtrain.db");
  int fds[2];
  BOOST_REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    RunChild(path, fds[1]);
  }
  ::close(fds[1]);

  std::int64_t job = 0;
  BOOST_REQUIRE_MESSAGE(ReadValue(fds[0], &job), "the child failed before creating the job");
  std::int64_t acknowledged = 0;
  for (int i = 0; i < 5; ++i) {
    BOOST_REQUIRE_MESSAGE(ReadValue(fds[0], &acknowledged), "the child failed to checkpoint");
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  BOOST_REQUIRE(::waitpid(pid, &status, 0) == pid);
  BOOST_REQUIRE(WIFSIGNALED(status));
  BOOST_TEST(WTERMSIG(status) == SIGKILL);
  // Acknowledgements written before the kill are still in the pipe.
  for (std::int64_t step = 0; ReadValue(fds[0], &step);) acknowledged = step;
  ::close(fds[0]);
  BOOST_TEST_MESSAGE("killed the child after checkpoint " << acknowledged << " was acknowledged");

  {
    Database raw = OpenRaw(path);
    BOOST_TEST(raw.QueryText("PRAGMA integrity_check").value() == "ok");
  }
  auto store = OpenStore(path);
  Result<JobRecord> record = store->GetJob(job);
  BOOST_REQUIRE_MESSAGE(record.ok(), record.status().message());
  BOOST_TEST(record.value().name == "crash");
  BOOST_TEST(record.value().spec_toml == SampleJob("x").spec_toml);
  BOOST_TEST(store->Events(job).value().size() == 1u);

  Result<LatestCheckpointResult> latest = store->LatestCheckpoint(job);
  BOOST_REQUIRE(latest.ok());
  BOOST_TEST(latest.value().skipped.empty());
  BOOST_REQUIRE(latest.value().checkpoint.has_value());
  const CheckpointData& newest = *latest.value().checkpoint;
  // The newest checkpoint is the last acknowledged one, or one the child saved after it.
  BOOST_TEST(newest.step >= acknowledged);
  BOOST_TEST(SameBits(newest, SampleCheckpoint(newest.step, kFloats)));
  // The child saves at most one more without acknowledging it, so with keep 3 the acknowledged
  // checkpoint itself is still there.
  Result<CheckpointData> acked = store->LoadCheckpoint(job, acknowledged);
  BOOST_REQUIRE_MESSAGE(acked.ok(), acked.status().message());
  BOOST_TEST(SameBits(acked.value(), SampleCheckpoint(acknowledged, kFloats)));
  Result<std::vector<CheckpointInfo>> all = store->Checkpoints(job);
  BOOST_REQUIRE(all.ok());
  BOOST_TEST(all.value().size() <= 3u);
  for (const CheckpointInfo& info : all.value()) {
    Result<CheckpointData> loaded = store->LoadCheckpoint(job, info.step);
    BOOST_TEST(loaded.ok(), loaded.status().message());
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace durability_test
}  // namespace dtrain::store
