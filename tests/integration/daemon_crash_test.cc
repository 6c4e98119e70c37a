// dtraind killed (SIGKILL) mid-training and in the middle of a checkpoint's write, and dtraind on a
// full disk: real daemons, real workers, the store read back as a restarted daemon would find it.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "daemon/store/store.h"
#include "daemon_fixture.h"
#include "stored_metrics.h"
#include "worker_processes.h"

namespace dtrain::testing {
namespace daemon_crash_test {

using json = nlohmann::json;
using namespace std::chrono_literals;

// Two replicas (sync, ring) for long enough to be killed in the middle.
constexpr const char* kSyncJob = R"(name = "crash-sync"
[data]
format = "synthetic"
synthetic = "blobs"
rows = 8000
test_rows = 500
features = 64
classes = 4
noise = 4.0
[model]
type = "mlp"
hidden = [256, 256]
[train]
epochs = 24
batch_size = 32
threads = 1
seed = 5
[optimizer]
type = "momentum"
lr = 0.02
[checkpoint]
every_steps = 25
[cluster]
workers = 2
mode = "sync"
)";

// A checkpoint of about 2 MiB after every step: the store is writing one most of the time.
constexpr const char* kEveryStepJob = R"(name = "every-step"
[data]
format = "synthetic"
synthetic = "blobs"
rows = 4000
test_rows = 200
features = 256
classes = 4
[model]
type = "mlp"
hidden = [512, 256]
[train]
epochs = 2
batch_size = 64
threads = 1
[optimizer]
type = "momentum"
lr = 0.01
[checkpoint]
every_steps = 1
keep = 2
)";

constexpr const char* kTinyJob = R"(name = "tiny"
[data]
format = "synthetic"
synthetic = "blobs"
rows = 200
features = 4
classes = 2
[model]
type = "logistic"
[train]
epochs = 1
batch_size = 50
)";

// How long a DiskJob trains, how often it logs and checkpoints.
struct DiskJobShape {
  int epochs = 4;
  int log_every = 1;
  int checkpoint_every = 10;
};

// Checkpoints of about 1 MiB every 10 steps, metrics every step (by default); `restarts` as
// given.
std::string DiskJob(const std::string& name, int restarts, const DiskJobShape& shape = {}) {
  return "name = \"" + name + R"("
[data]
format = "synthetic"
synthetic = "blobs"
rows = 8000
test_rows = 200
features = 256
classes = 4
[model]
type = "mlp"
hidden = [512]
[optimizer]
type = "momentum"
lr = 0.01
[checkpoint]
keep = 5
)" +
         "every_steps = " + std::to_string(shape.checkpoint_every) +
         "\n[restart]\nmax_restarts = " + std::to_string(restarts) +
         "\n[train]\nbatch_size = 64\nthreads = 1\nepochs = " + std::to_string(shape.epochs) +
         "\nlog_every = " + std::to_string(shape.log_every) + "\n";
}

// Without checkpoints (a full disk would fail them), metrics every 10 steps, training for
// minutes (a test cancels it once it has seen what it needs).
const DiskJobShape kUncheckpointed{.epochs = 5000, .log_every = 10, .checkpoint_every = 0};

// Two async replicas and a shard, without checkpoints, training for minutes (likewise).
constexpr const char* kAsyncJob = R"(name = "async-on-full-disk"
[data]
format = "synthetic"
rows = 20000
[train]
epochs = 0
steps = 10000000
batch_size = 16
log_every = 100
[cluster]
workers = 2
mode = "async"
servers = 1
timeout_seconds = 30
[checkpoint]
every_steps = 0
[restart]
max_restarts = 1
)";

bool WaitUntil(const std::function<bool()>& done, std::chrono::seconds limit = 60s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return done();
}

std::vector<std::string> Reasons(const json& job) {
  std::vector<std::string> out;
  for (const json& e : job["events"]) out.push_back(e["reason"]);
  return out;
}

bool AnyContains(const std::vector<std::string>& lines, const std::string& needle) {
  for (const std::string& l : lines) {
    if (l.find(needle) != std::string::npos) return true;
  }
  return false;
}

std::vector<std::string> LogLines(const DaemonFixture& d, std::int64_t id) {
  auto stream = net::FrameStream::ConnectUnix(d.socket(), 5s);
  BOOST_REQUIRE(stream.ok());
  const json request = {{"v", 1}, {"type", "logs"}, {"id", id}, {"follow", false}};
  BOOST_REQUIRE(stream.value().WriteString(net::MessageType::kControl, 0, 0, request.dump(), 5s).ok());
  std::vector<std::string> lines;
  for (;;) {
    auto frame = stream.value().Read(60s);
    BOOST_REQUIRE_MESSAGE(frame.ok(), frame.status().message());
    const json reply = json::parse(frame.value().payload);
    BOOST_REQUIRE(reply["ok"] == true);
    if (reply.contains("lines")) {
      for (const json& l : reply["lines"]) lines.push_back(l["line"]);
    }
    if (reply.contains("end")) return lines;
  }
}

// Polls the job's status until it has ended (`wait` would hide a daemon that stopped answering).
json WaitEnded(const DaemonFixture& d, std::int64_t id) {
  json job;
  const bool ended = WaitUntil([&] {
    job = d.Status(id);
    const std::string state = job["state"];
    return state == "succeeded" || state == "failed" || state == "cancelled";
  }, 90s);
  BOOST_TEST(ended, "job " << id << " has not ended: " << job.dump());
  return job;
}

std::int64_t NewestCheckpointStep(const DaemonFixture& d, std::int64_t id) {
  const json cps = d.Request({{"type", "checkpoints"}, {"id", id}});
  if (cps["ok"] != true || cps["checkpoints"].empty()) return -1;
  return cps["checkpoints"].back()["step"].get<std::int64_t>();
}

// The store as a killed daemon left it (the file and its WAL, copied so the live files stay
// untouched), opened as the next daemon would open it: every checkpoint row of `jobs` must load
// and verify its checksum. Returns how many rows were checked.
int VerifyCheckpointsAsLeft(const std::string& state_dir, const std::vector<std::int64_t>& jobs) {
  TempDir copy;
  for (const char* suffix : {"", "-wal"}) {
    const std::string from = state_dir + "/dtrain.db" + suffix;
    if (std::filesystem::exists(from)) {
      std::filesystem::copy_file(from, copy.Path(std::string("dtrain.db") + suffix));
    }
  }
  auto store = store::Store::Open(copy.Path("dtrain.db"));
  BOOST_REQUIRE_MESSAGE(store.ok(), store.status().message());
  int checked = 0;
  for (std::int64_t job : jobs) {
    auto rows = store.value()->Checkpoints(job);
    BOOST_REQUIRE_MESSAGE(rows.ok(), rows.status().message());
    for (const store::CheckpointInfo& row : rows.value()) {
      auto loaded = store.value()->LoadCheckpoint(job, row.step);
      BOOST_TEST(loaded.ok(), "corrupt: " << loaded.status().message());
      ++checked;
    }
    auto latest = store.value()->LatestCheckpoint(job);
    BOOST_REQUIRE(latest.ok());
    BOOST_TEST(latest.value().skipped.empty());
  }
  return checked;
}

std::uint32_t BigEndian32(const std::string& bytes, std::size_t at) {
  return (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at])) << 24) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + 1])) << 16) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + 2])) << 8) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + 3]));
}

// Frames of the WAL's current generation written after its last commit frame: a transaction
// being written (sqlite.org/fileformat2.html#walformat). 0 when none is.
int UncommittedWalFrames(const std::string& wal_path) {
  const std::string wal = ReadFile(wal_path);
  if (wal.size() < 32) return 0;
  const std::uint32_t page = BigEndian32(wal, 8);
  const std::uint32_t salt1 = BigEndian32(wal, 16), salt2 = BigEndian32(wal, 20);
  int pending = 0;
  for (std::size_t at = 32; at + 24 <= wal.size(); at += 24 + page) {
    if (BigEndian32(wal, at + 8) != salt1 || BigEndian32(wal, at + 12) != salt2) break;
    pending = BigEndian32(wal, at + 4) != 0 ? 0 : pending + 1;  // a commit frame ends a transaction
  }
  return pending;
}

// Freezes the daemon at random moments until a checkpoint's transaction is half written to the
// WAL (64 pages or more; metric and state writes are a few), and kills it there (SIGSTOP then
// SIGKILL is a SIGKILL at that moment). Returns whether it caught one; after `tries` misses it
// kills it anyway.
bool KillMidWrite(DaemonFixture& d, const std::string& wal, std::mt19937& random, int tries = 400) {
  std::uniform_int_distribution<int> pause_ms(1, 15);
  for (int i = 0; i < tries; ++i) {
    ::kill(d.pid(), SIGSTOP);
    for (int spin = 0; spin < 1000 && !Stopped(d.pid()); ++spin) std::this_thread::sleep_for(100us);
    if (UncommittedWalFrames(wal) >= 64) {  // 256 KiB or more: a checkpoint, not metrics
      d.Stop(SIGKILL);
      return true;
    }
    ::kill(d.pid(), SIGCONT);
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(random)));
  }
  d.Stop(SIGKILL);
  return false;
}

// A tmpfs of `size` mounted on `path` for the guard's life (lazily unmounted: also when a test
// fails with a daemon still holding files there).
class TmpfsMount {
 public:
  TmpfsMount(std::string path, const std::string& size) : path_(std::move(path)) {
    const std::string options = "size=" + size;
    mounted_ = ::mount("tmpfs", path_.c_str(), "tmpfs", 0, options.c_str()) == 0;
    error_ = mounted_ ? 0 : errno;
  }
  ~TmpfsMount() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
  }
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;
  bool mounted() const { return mounted_; }
  int error() const { return error_; }

 private:
  std::string path_;
  bool mounted_ = false;
  int error_ = 0;
};

// Takes every free byte of the file system that holds `path` (a file it grows) in one
// allocation, as another program filling the disk would, and stops: space the daemon gives back
// afterwards (its reserve) is left to it. Returns the bytes taken.
std::uint64_t FillDisk(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  BOOST_REQUIRE(fd >= 0);
  std::uint64_t taken = 0;
  // A try fails when the daemon wrote between the measure and the allocation: measure again.
  for (int tries = 0; tries < 1000 && taken == 0; ++tries) {
    struct statvfs fs {};
    struct stat st {};
    BOOST_REQUIRE(::fstatvfs(fd, &fs) == 0 && ::fstat(fd, &st) == 0);
    const std::uint64_t free = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
    if (free == 0) break;
    if (::posix_fallocate(fd, st.st_size, static_cast<off_t>(free)) == 0) taken = free;
  }
  ::close(fd);
  return taken;
}

// Restarts `d` with its state directory on a 32 MiB tmpfs (`mount`); false, saying why in the
// test's log, where that cannot be done (not root, no tmpfs).
bool RestartOnSmallDisk(DaemonFixture& d, std::optional<TmpfsMount>& mount) {
  if (::geteuid() != 0) {
    BOOST_TEST_MESSAGE("skipped: mounting a small tmpfs needs root");
    return false;
  }
  d.Stop(SIGTERM);
  mount.emplace(d.dir().Path("state"), "32m");
  if (!mount->mounted()) {
    BOOST_TEST_MESSAGE("skipped: cannot mount a tmpfs: " << std::strerror(mount->error()));
    return false;
  }
  d.Start();
  return true;
}

// Submits DiskJob(name, restarts) and waits until its checkpoint at step 20 is stored.
std::int64_t SubmitPastTwoCheckpoints(const DaemonFixture& d, const std::string& name,
                                      int restarts) {
  const std::int64_t id = d.Submit(DiskJob(name, restarts));
  BOOST_REQUIRE(WaitUntil([&] { return NewestCheckpointStep(d, id) >= 20; }));
  return id;
}

// Waits until no worker row of job `id` says "running" (exits stored late included); `job`: the
// job as last read.
bool WaitForStoredExits(const DaemonFixture& d, std::int64_t id, json& job) {
  return WaitUntil([&] {
    job = d.Status(id);
    return std::none_of(job["workers"].begin(), job["workers"].end(),
                        [](const json& w) { return w["state"] == "running"; });
  });
}

BOOST_AUTO_TEST_SUITE(daemon_crash)

BOOST_AUTO_TEST_CASE(sigkill_mid_training_orphans_no_worker_loses_no_submission_and_resumes) {
  DaemonFixture d({"--max-jobs", "1"});
  const std::int64_t sync = d.Submit(kSyncJob);
  BOOST_REQUIRE(WaitUntil([&] { return NewestCheckpointStep(d, sync) >= 100; }));
  const json running = d.Status(sync);
  BOOST_REQUIRE_MESSAGE(running["state"] == "running", running.dump());
  const std::vector<pid_t> workers = RunningWorkerPids(running);
  BOOST_REQUIRE_EQUAL(workers.size(), 2u);

  // Submissions keep arriving while the daemon is killed: each one it answered must survive.
  std::vector<std::int64_t> acknowledged;  // read once the submitter has ended
  std::atomic<int> answered{0};
  std::atomic<bool> killed{false};
  std::thread submitter([&] {
    for (int i = 0; i < 40 && !killed; ++i) {
      const auto reply = d.TryRequest({{"type", "submit"}, {"job_toml", kTinyJob},
                                       {"source", "tiny.toml"}});
      if (!reply) break;
      if ((*reply)["ok"] == true) {
        acknowledged.push_back((*reply)["job"]["id"].get<std::int64_t>());
        ++answered;
      }
      std::this_thread::sleep_for(5ms);
    }
  });
  WaitUntil([&] { return answered >= 3; }, 20s);
  d.Stop(SIGKILL);
  killed = true;
  submitter.join();
  BOOST_TEST_MESSAGE(acknowledged.size() << " submissions acknowledged before the kill");

  // Its workers die with it (PR_SET_PDEATHSIG), none keeps training as an orphan.
  BOOST_TEST(WaitUntil([&] {
    for (pid_t pid : workers) {
      if (WorkerAlive(pid)) return false;
    }
    return true;
  }, 10s));
  BOOST_TEST(d.WorkerProcesses().empty());
  BOOST_TEST(VerifyCheckpointsAsLeft(d.dir().Path("state"), {sync}) >= 1);

  d.Start();
  for (std::int64_t id : acknowledged) {
    const json reply = d.Request({{"type", "status"}, {"id", id}});
    BOOST_TEST(reply["ok"] == true, "acknowledged job " << id << " is lost: " << reply.dump());
    d.Request({{"type", "cancel"}, {"id", id}});  // they only had to exist
  }
  const json done = d.Wait(sync);
  BOOST_TEST(done["state"] == "succeeded", done.dump());
  const std::vector<std::string> reasons = Reasons(done);
  BOOST_TEST(AnyContains(reasons, "its processes are gone; resuming from the newest checkpoint"));
  BOOST_TEST(AnyContains(reasons, "from the checkpoint at step"));
  // The old attempt's processes are recorded as killed, not left "running".
  for (const json& w : done["workers"]) {
    const pid_t pid = w["pid"].get<pid_t>();
    if (std::find(workers.begin(), workers.end(), pid) != workers.end()) {
      BOOST_TEST(w["state"] == "killed");
    }
  }
  BOOST_TEST(!AnyContains(LogLines(d, sync), "skipped damaged checkpoint"));
}

BOOST_AUTO_TEST_CASE(sigkill_while_a_checkpoint_is_being_written_never_corrupts_one) {
  DaemonFixture d;
  const std::string wal = d.dir().Path("state") + "/dtrain.db-wal";
  const std::int64_t id = d.Submit(kEveryStepJob);
  std::mt19937 random(7);
  int mid_write = 0;
  std::int64_t newest = -1;
  for (int kill = 0; kill < 3; ++kill) {
    // Training (again), with a checkpoint written since the (re)start.
    BOOST_REQUIRE(WaitUntil([&] {
      return d.Status(id)["state"] == "running" && NewestCheckpointStep(d, id) > newest;
    }));
    mid_write += KillMidWrite(d, wal, random) ? 1 : 0;
    BOOST_TEST(WaitUntil([&] { return d.WorkerProcesses().empty(); }, 10s));
    BOOST_TEST(VerifyCheckpointsAsLeft(d.dir().Path("state"), {id}) >= 1);
    d.Start();
    newest = NewestCheckpointStep(d, id);
  }
  BOOST_TEST_MESSAGE(mid_write << " of 3 kills landed in the middle of a checkpoint's write");
  BOOST_TEST(mid_write >= 1);
  const json done = d.Wait(id);
  BOOST_TEST(done["state"] == "succeeded", done.dump());
  BOOST_TEST(!AnyContains(Reasons(done), "restart "));  // a daemon's crash is not the job's fault
  BOOST_TEST(!AnyContains(LogLines(d, id), "skipped damaged checkpoint"));
}

BOOST_AUTO_TEST_CASE(a_full_disk_fails_the_checkpoint_keeps_the_previous_and_says_why) {
  DaemonFixture d;
  std::optional<TmpfsMount> mount;
  if (!RestartOnSmallDisk(d, mount)) return;
  const std::string state = d.dir().Path("state");
  const std::string filler = state + "/filler";

  // 1. The disk fills while a job checkpoints; space comes back before its restarts run out.
  const std::int64_t id = SubmitPastTwoCheckpoints(d, "disk-full", 10);
  BOOST_TEST_MESSAGE("filled " << FillDisk(filler) << " bytes");
  json job;
  const bool failed_or_ended = WaitUntil([&] {
    job = d.Status(id);  // the daemon keeps answering
    return AnyContains(Reasons(job), "database or disk is full") ||
           (job["state"] != "running" && job["state"] != "recovering");
  });
  if (!failed_or_ended) {
    for (const std::string& line : LogLines(d, id)) BOOST_TEST_MESSAGE("log: " << line);
    for (const auto& f : std::filesystem::directory_iterator(state)) {
      BOOST_TEST_MESSAGE("file: " << f.path().filename().string() << " "
                                  << (f.is_regular_file() ? f.file_size() : 0));
    }
    BOOST_TEST_MESSAGE("daemon: " << d.Stop(SIGTERM).err);
  }
  BOOST_REQUIRE_MESSAGE(failed_or_ended, job.dump());
  BOOST_TEST(AnyContains(Reasons(job), "database or disk is full"), job.dump());
  BOOST_TEST(AnyContains(Reasons(job), "sent a checkpoint that could not be stored"), job.dump());
  // The newest checkpoint that was committed still loads and verifies.
  const json newest = d.Request({{"type", "checkpoint"}, {"id", id}});
  BOOST_TEST(newest["ok"] == true, newest.dump());
  // The worker's own words make it into the log, although the disk is full. The job's reason is
  // set before the worker has read the refusal, so its line may come a moment later.
  BOOST_TEST(WaitUntil([&] { return AnyContains(LogLines(d, id), "checkpoint failed"); }));
  std::filesystem::remove(filler);
  const json recovered = WaitEnded(d, id);
  BOOST_TEST(recovered["state"] == "succeeded", recovered.dump());
  BOOST_TEST(AnyContains(Reasons(recovered), "restart 1 of 10: worker rank 0"), recovered.dump());
  for (const std::string& r : Reasons(recovered)) BOOST_TEST_MESSAGE("event: " << r);

  // 2. The disk stays full: the job fails, and says why.
  const std::int64_t doomed = SubmitPastTwoCheckpoints(d, "disk-stays-full", 1);
  FillDisk(filler);
  const json failed = WaitEnded(d, doomed);
  BOOST_TEST(failed["state"] == "failed", failed.dump());
  const std::string reason = failed["reason"];
  BOOST_TEST(reason.find("disk is full") != std::string::npos, reason);
  BOOST_TEST(reason.find("gave up after 1 restarts") != std::string::npos, reason);
  for (const std::string& r : Reasons(failed)) BOOST_TEST_MESSAGE("event: " << r);
  for (const std::string& l : LogLines(d, doomed)) BOOST_TEST_MESSAGE("log: " << l);
  BOOST_TEST(d.Request({{"type", "checkpoint"}, {"id", doomed}})["ok"] == true);
  std::filesystem::remove(filler);
  BOOST_TEST(d.Request({{"type", "list"}})["ok"] == true);
  d.Stop(SIGTERM);
}

// Another program takes every byte the disk frees (`filler`), the daemon's reserve too, until
// the guard ends and removes it.
class DiskHog {
 public:
  explicit DiskHog(std::string filler)
      : filler_(std::move(filler)), thread_([this] {
          while (hogging_) {
            FillDisk(filler_);
            std::this_thread::sleep_for(1ms);
          }
        }) {}
  ~DiskHog() { Stop(); }
  DiskHog(const DiskHog&) = delete;
  DiskHog& operator=(const DiskHog&) = delete;
  void Stop() {
    hogging_ = false;
    if (thread_.joinable()) thread_.join();
    std::filesystem::remove(filler_);
  }

 private:
  std::string filler_;
  std::atomic<bool> hogging_{true};
  std::thread thread_;
};

BOOST_AUTO_TEST_CASE(a_disk_another_program_keeps_full_leaves_no_job_running_once_space_is_back) {
  DaemonFixture d;
  std::optional<TmpfsMount> mount;
  if (!RestartOnSmallDisk(d, mount)) return;
  const std::string filler = d.dir().Path("state") + "/filler";
  const std::int64_t id = SubmitPastTwoCheckpoints(d, "kept-full", 1);

  // Nothing the daemon writes is stored while the job's checkpoint fails, its one restart runs
  // and fails the same way, and it gives up (two worker processes seen, none left).
  DiskHog hog(filler);
  // Polled every 2 ms, not WaitUntil's 20: the restarted worker may live briefly.
  std::set<pid_t> seen;
  bool gave_up = false;
  for (const auto until = std::chrono::steady_clock::now() + 120s;
       !gave_up && std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(2ms)) {
    const std::vector<pid_t> now = d.WorkerProcesses();
    seen.insert(now.begin(), now.end());
    gave_up = seen.size() >= 2 && now.empty();
  }
  hog.Stop();
  BOOST_TEST(gave_up, seen.size() << " worker processes seen");

  // Space is back: what the daemon could not store then is stored now, in the order it
  // happened: the restart, the job's end, its processes' exits. Nothing says "running" for a
  // process that is gone.
  json ended = WaitEnded(d, id);
  BOOST_TEST(ended["state"] == "failed", ended.dump());
  BOOST_TEST(
      ended["reason"].get<std::string>().find("gave up after 1 restarts") != std::string::npos,
      ended.dump());
  BOOST_TEST(AnyContains(Reasons(ended), "restart 1 of 1"), ended.dump());
  BOOST_TEST(WaitForStoredExits(d, id, ended), ended.dump());
  // The store keeps its reserve again at once: the next job's metrics are stored from its first
  // steps, not only after its first checkpoint (which would make the reserve again too).
  const std::int64_t next = d.Submit(DiskJob("after", 1));
  const json done = WaitEnded(d, next);
  BOOST_TEST(done["state"] == "succeeded", done.dump());
  const auto losses = StoredMetric(d, next, "train_loss");
  BOOST_TEST(!losses.empty());
  BOOST_TEST((!losses.empty() && losses.front().first < 10), losses.size() << " steps stored");
}

BOOST_AUTO_TEST_CASE(a_daemon_restarted_on_a_full_disk_starts_and_resumes_once_space_is_back) {
  DaemonFixture d;
  std::optional<TmpfsMount> mount;
  if (!RestartOnSmallDisk(d, mount)) return;
  const std::string filler = d.dir().Path("state") + "/filler";
  const std::int64_t id = SubmitPastTwoCheckpoints(d, "restarted-on-full-disk", 10);

  // The daemon dies, and the disk fills meanwhile. The next daemon opens its store in the space
  // it kept (its reserve), starts, answers, and records its workers' deaths and the job's
  // recovery once space is back (or at once, in what the reserve left).
  d.Stop(SIGKILL);
  BOOST_REQUIRE(WaitUntil([&] { return d.WorkerProcesses().empty(); }, 10s));
  BOOST_TEST_MESSAGE("filled " << FillDisk(filler) << " bytes");
  d.Start();
  BOOST_TEST(d.Request({{"type", "list"}})["ok"] == true);
  std::filesystem::remove(filler);

  const json done = WaitEnded(d, id);
  BOOST_TEST(done["state"] == "succeeded", done.dump());
  BOOST_TEST(AnyContains(Reasons(done), "its processes are gone; resuming from the newest"),
             done.dump());
  json job;
  BOOST_TEST(WaitForStoredExits(d, id, job), job.dump());
}

BOOST_AUTO_TEST_CASE(a_worker_started_on_a_full_disk_gets_its_row_once_space_is_back) {
  DaemonFixture d;
  std::optional<TmpfsMount> mount;
  if (!RestartOnSmallDisk(d, mount)) return;
  const std::string filler = d.dir().Path("state") + "/filler";
  const std::int64_t id = d.Submit(DiskJob("uncheckpointed", 2, kUncheckpointed));
  BOOST_REQUIRE(d.WaitForStep(id, 1)["workers"].size() == 1);
  const std::vector<pid_t> first = d.WorkerProcesses();
  BOOST_REQUIRE(first.size() == 1);

  // The disk fills (the daemon's reserve too, once its metric rows fail), the worker is killed,
  // and the daemon restarts it: the new process's start cannot be stored, and it trains on.
  DiskHog hog(filler);
  std::this_thread::sleep_for(1s);
  BOOST_REQUIRE(::kill(first.front(), SIGKILL) == 0);
  std::vector<pid_t> second;
  BOOST_REQUIRE(WaitUntil([&] {
    second = d.WorkerProcesses();
    return second.size() == 1 && second.front() != first.front();
  }));
  std::this_thread::sleep_for(1s);
  const double space_back =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  hog.Stop();

  // Space is back: the restarted process has its row, with the time it started (before the
  // row could be stored), and once the job is cancelled, its exit.
  BOOST_REQUIRE(WaitUntil([&] { return d.Status(id)["workers"].size() == 2; }));
  d.Request({{"type", "cancel"}, {"id", id}});
  json done = WaitEnded(d, id);
  BOOST_TEST(done["state"] == "cancelled", done.dump());
  BOOST_TEST(WaitForStoredExits(d, id, done), done.dump());
  const json& workers = done["workers"];
  BOOST_REQUIRE_MESSAGE(workers.size() == 2, done.dump());
  BOOST_TEST(workers[1]["pid"] == second.front(), done.dump());
  BOOST_TEST(workers[1]["state"] == "exited", done.dump());
  BOOST_TEST(workers[1]["started"].get<double>() < space_back, done.dump());
}

BOOST_AUTO_TEST_CASE(an_async_replica_restarted_on_a_full_disk_counts_once_space_is_back) {
  DaemonFixture d;
  std::optional<TmpfsMount> mount;
  if (!RestartOnSmallDisk(d, mount)) return;
  const std::string filler = d.dir().Path("state") + "/filler";
  const std::int64_t id = d.Submit(kAsyncJob);
  json job = d.WaitForStep(id, 100);
  BOOST_REQUIRE_MESSAGE(job["state"] == "running" && job["workers"].size() == 3, job.dump());
  const pid_t victim = job["workers"][1]["pid"].get<pid_t>();

  // The disk fills; worker 1 is killed and restarted alone while the others go on: the restart
  // (an event that changes no state, and what the job's restart count is made of) cannot be
  // stored yet.
  DiskHog hog(filler);
  std::this_thread::sleep_for(1s);
  BOOST_REQUIRE(::kill(victim, SIGKILL) == 0);
  BOOST_REQUIRE(WaitUntil([&] {
    const std::vector<pid_t> now = d.WorkerProcesses();
    return now.size() == 3 && std::find(now.begin(), now.end(), victim) == now.end();
  }));
  std::this_thread::sleep_for(1s);
  const double space_back =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  hog.Stop();

  // Space is back: the restart is stored, in order and with its time, and counted (also once
  // the job has ended: the count comes from the stored events).
  BOOST_REQUIRE(WaitUntil([&] { return d.Status(id)["restarts"] == 1; }));
  d.Request({{"type", "cancel"}, {"id", id}});
  job = WaitEnded(d, id);
  BOOST_TEST(job["state"] == "cancelled", job.dump());
  BOOST_TEST(job["restarts"] == 1, job.dump());
  int alone = 0;
  for (const json& e : job["events"]) {
    const std::string reason = e["reason"];
    if (reason.find("started again alone") == std::string::npos) continue;
    ++alone;
    BOOST_TEST(e["to"] == "running", job.dump());
    BOOST_TEST(e["time"].get<double>() < space_back, job.dump());
  }
  BOOST_TEST(alone == 1, job.dump());
  BOOST_TEST(WaitForStoredExits(d, id, job), job.dump());
  BOOST_TEST(job["workers"].size() == 4u, job.dump());  // the replacement's start too
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace daemon_crash_test
}  // namespace dtrain::testing
