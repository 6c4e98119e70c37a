// The lifecycle of ended daemon jobs through the real CLI and a real dtraind: `dtrain resume`
// continues a cancelled job from its checkpoint with what may change (and refuses the rest, also
// from a client that skips dtrain's checks),
// `dtrain rm` refuses a running job and removes an ended one, `dtrain prune` removes by age and
// state and the store file shrinks; on a shared machine, another user may neither resume nor
// remove a job, and prunes only their own.
#include <sys/stat.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "daemon/store/sqlite.h"
#include "integration/daemon_fixture.h"
#include "integration/shared_daemon.h"
#include "integration/test_user.h"

namespace dtrain::testing {
namespace job_lifecycle_test {

using json = nlohmann::json;

// 2000 rows in batches of 32: 63 steps an epoch; by default it trains until cancelled, a
// checkpoint every 50 steps. `train_keys`: more lines of [train].
constexpr std::int64_t kStepsPerEpoch = 63;
std::string Job(std::int64_t epochs = 1000000, const std::string& train_keys = "") {
  return R"(name = "lifecycle"
[data]
format = "synthetic"
synthetic = "blobs"
rows = 2000
test_rows = 200
features = 6
classes = 3
[model]
type = "softmax"
[optimizer]
type = "sgd"
lr = 0.1
[checkpoint]
every_steps = 50
[train]
batch_size = 32
threads = 1
epochs = )" + std::to_string(epochs) + "\n" + train_keys;
}

ProcessResult Dtrain(const DaemonFixture& d, std::vector<std::string> args) {
  args.insert(args.begin(), {EnvPath("DTRAIN_BIN"), "--socket", d.socket()});
  return RunProcess(args, d.dir().Path(""));
}

// Submits the endless job, lets it train past `step` and cancels it; returns its id.
std::int64_t CancelledJob(const DaemonFixture& d, std::int64_t step) {
  const std::int64_t id = d.Submit(Job());
  d.WaitForStep(id, step);
  BOOST_REQUIRE(d.Request({{"type", "cancel"}, {"id", id}})["ok"] == true);
  BOOST_REQUIRE(d.Wait(id)["state"] == "cancelled");
  return id;
}

std::int64_t NewestCheckpoint(const DaemonFixture& d, std::int64_t id) {
  const json reply = d.Request({{"type", "checkpoints"}, {"id", id}});
  BOOST_REQUIRE_MESSAGE(reply["ok"] == true && !reply["checkpoints"].empty(), reply.dump());
  return reply["checkpoints"].back()["step"].get<std::int64_t>();
}

bool HasEvent(const json& job, const std::string& reason) {
  for (const json& e : job["events"]) {
    if (e["reason"].get<std::string>().find(reason) != std::string::npos) return true;
  }
  return false;
}

// The pages of the daemon's store file SQLite keeps free (not given back to the file system).
std::int64_t FreePages(const DaemonFixture& d) {
  auto db = store::Database::Open(d.dir().Path("state") + "/dtrain.db", store::Database::kExisting);
  BOOST_REQUIRE(db.ok());
  auto free = db.value().QueryInt("PRAGMA freelist_count");
  BOOST_REQUIRE(free.ok());
  return free.value();
}

std::uint64_t StoreBytes(const DaemonFixture& d) {
  const std::string db = d.dir().Path("state") + "/dtrain.db";
  std::error_code ignored;
  const auto size = [&](const std::string& p) {
    const auto n = std::filesystem::file_size(p, ignored);
    return ignored ? std::uintmax_t{0} : n;
  };
  return size(db) + size(db + "-wal");
}

BOOST_AUTO_TEST_SUITE(job_lifecycle)

BOOST_AUTO_TEST_CASE(resume_continues_a_cancelled_job_from_its_checkpoint_with_new_epochs) {
  DaemonFixture d;
  const std::int64_t id = CancelledJob(d, 120);
  const std::int64_t checkpoint = NewestCheckpoint(d, id);
  const std::string job = std::to_string(id);

  // What shapes the checkpoint may not change: exit 2, naming the key and what may change.
  const ProcessResult refused = Dtrain(d, {"resume", job, "--set", "train.batch_size=7"});
  BOOST_TEST(refused.exit_code == 2, refused.err);
  BOOST_TEST(refused.err.find("train.batch_size") != std::string::npos, refused.err);
  BOOST_TEST(refused.err.find("what may change: train.epochs") != std::string::npos, refused.err);
  BOOST_TEST(d.Status(id)["state"] == "cancelled");

  // Resumed as a new attempt of the same job: it continues from the checkpoint's step and
  // trains to the new number of epochs.
  const std::int64_t epochs = checkpoint / kStepsPerEpoch + 2;
  const ProcessResult resumed =
      Dtrain(d, {"resume", job, "--set", "train.epochs=" + std::to_string(epochs), "--json"});
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  const json ended = json::parse(resumed.out);
  BOOST_TEST(ended["id"] == id);
  BOOST_TEST(ended["state"] == "succeeded");
  BOOST_TEST(NewestCheckpoint(d, id) == epochs * kStepsPerEpoch);
  const json status = d.Status(id);
  BOOST_TEST(HasEvent(status, "resumed with train.epochs=" + std::to_string(epochs)));
  BOOST_TEST(HasEvent(status, "from the checkpoint at step " + std::to_string(checkpoint)),
             status.dump());
  const json spec = d.Request({{"type", "checkpoint"}, {"id", id}});
  BOOST_TEST(spec["spec_toml"].get<std::string>().find("epochs = " + std::to_string(epochs)) !=
             std::string::npos);

  // A job that succeeded has nothing to resume.
  const ProcessResult again = Dtrain(d, {"resume", job});
  BOOST_TEST(again.exit_code == 1, again.err);
  BOOST_TEST(again.err.find("nothing to resume") != std::string::npos, again.err);
  BOOST_TEST(Dtrain(d, {"resume", "99"}).exit_code == 4);
}

// A client that skips dtrain's own checks: every malformed or forbidden request is refused with
// its reason, nothing changes, and the daemon answers on.
BOOST_AUTO_TEST_CASE(raw_requests_are_checked_by_the_daemon) {
  DaemonFixture d;
  const std::int64_t id = CancelledJob(d, 10);
  const json not_a_list = d.Request({{"type", "resume"}, {"id", id}, {"set", "train.epochs=1"}});
  BOOST_TEST(not_a_list["code"] == "bad_request", not_a_list.dump());
  const json data = d.Request(
      {{"type", "resume"}, {"id", id}, {"set", {"data.train=/etc/shadow", "train.epochs=1"}}});
  BOOST_TEST(data["code"] == "invalid_job", data.dump());
  BOOST_REQUIRE(data["diagnostics"].size() == 1u);
  BOOST_TEST(data["diagnostics"][0]["key"] == "data.train");
  const json bad_value = d.Request({{"type", "resume"}, {"id", id}, {"set", {"train.epochs=-3"}}});
  BOOST_TEST(bad_value["code"] == "invalid_job", bad_value.dump());
  BOOST_TEST(d.Status(id)["state"] == "cancelled");
  BOOST_TEST(d.Request({{"type", "rm"}})["code"] == "bad_request");
  BOOST_TEST(d.Request({{"type", "prune"}})["code"] == "bad_request");
  BOOST_TEST(d.Request({{"type", "prune"}, {"older_than", -1}})["code"] == "bad_request");
  BOOST_TEST(
      d.Request({{"type", "prune"}, {"older_than", 0}, {"states", {"running"}}})["code"] ==
      "bad_request");
  BOOST_TEST(d.Request({{"type", "prune"}, {"older_than", 0}, {"states", 7}})["code"] ==
             "bad_request");
  BOOST_TEST(d.Status(id)["state"] == "cancelled");
}

BOOST_AUTO_TEST_CASE(rm_refuses_a_running_job_and_removes_an_ended_one) {
  DaemonFixture d;
  const std::int64_t id = d.Submit(Job());
  d.WaitForStep(id, 10);
  const std::string job = std::to_string(id);
  const ProcessResult refused = Dtrain(d, {"rm", job});
  BOOST_TEST(refused.exit_code == 1, refused.err);
  BOOST_TEST(refused.err.find("dtrain cancel " + job) != std::string::npos, refused.err);
  BOOST_TEST(d.Status(id)["state"] == "running");

  BOOST_REQUIRE(d.Request({{"type", "cancel"}, {"id", id}})["ok"] == true);
  d.Wait(id);
  const ProcessResult removed = Dtrain(d, {"rm", job, "--json"});
  BOOST_TEST(removed.exit_code == 0, removed.err);
  BOOST_TEST(json::parse(removed.out)["removed"][0]["id"] == id);
  BOOST_TEST(Dtrain(d, {"status", job}).exit_code == 4);
  BOOST_TEST(Dtrain(d, {"rm", job}).exit_code == 4);
}

BOOST_AUTO_TEST_CASE(prune_removes_by_age_and_state_and_the_store_shrinks) {
  DaemonFixture d;
  // Metrics and a progress line every step: a job of a few hundred steps fills many pages.
  const std::int64_t succeeded = d.Submit(Job(2));
  BOOST_REQUIRE(d.Wait(succeeded)["state"] == "succeeded");
  const std::int64_t cancelled = d.Submit(Job(100000, "log_every = 1\n"));
  d.WaitForStep(cancelled, 400);
  BOOST_REQUIRE(d.Request({{"type", "cancel"}, {"id", cancelled}})["ok"] == true);
  d.Wait(cancelled);
  // Its data cannot be read where it runs: it fails at once, without restarts.
  const std::int64_t failed = d.Submit(
      "name = \"unreadable\"\n[data]\nformat = \"csv\"\ntrain = \"/nonexistent/train.csv\"\n"
      "[model]\ntype = \"logistic\"\n[train]\nepochs = 1\n");
  BOOST_REQUIRE(d.Wait(failed)["state"] == "failed");

  // Nothing is that old yet.
  const ProcessResult none = Dtrain(d, {"prune", "--older-than", "1h", "--json"});
  BOOST_TEST(none.exit_code == 0, none.err);
  BOOST_TEST(json::parse(none.out)["removed"].empty());
  // A dry run lists and removes nothing.
  const ProcessResult dry =
      Dtrain(d, {"prune", "--older-than", "0s", "--state", "failed", "--dry-run", "--json"});
  BOOST_TEST(dry.exit_code == 0, dry.err);
  BOOST_TEST(json::parse(dry.out)["removed"].size() == 1u, dry.out);
  BOOST_TEST(d.Status(failed)["state"] == "failed");

  const std::uint64_t before = StoreBytes(d);
  const ProcessResult pruned =
      Dtrain(d, {"prune", "--older-than", "0s", "--state", "cancelled,failed", "--json"});
  BOOST_TEST(pruned.exit_code == 0, pruned.err);
  const json out = json::parse(pruned.out);
  std::vector<std::int64_t> ids;
  for (const json& j : out["removed"]) ids.push_back(j["id"].get<std::int64_t>());
  BOOST_TEST(ids == (std::vector<std::int64_t>{cancelled, failed}));
  BOOST_TEST(out["reclaimed"].get<std::uint64_t>() > 0u);
  // The space is given back to the file system, not kept as free pages.
  BOOST_TEST(StoreBytes(d) < before);
  BOOST_TEST(FreePages(d) == 0);
  BOOST_TEST(d.Status(succeeded)["state"] == "succeeded");  // another state: left alone
  BOOST_TEST(Dtrain(d, {"status", std::to_string(cancelled)}).exit_code == 4);

  const ProcessResult bad = Dtrain(d, {"prune", "--older-than", "3x"});
  BOOST_TEST(bad.exit_code == 2);
  BOOST_TEST(bad.err.find("30d") != std::string::npos, bad.err);
  BOOST_TEST(Dtrain(d, {"prune", "--older-than", "1d", "--state", "running"}).exit_code == 2);
}

// Root only (it creates a user): another user may not resume or remove a job, and prunes only
// their own.
BOOST_AUTO_TEST_CASE(another_user_can_neither_resume_nor_remove_a_job_and_prunes_only_theirs) {
  if (!Root()) return;
  constexpr const char* kUser = "dtrain-lifecycle-user";
  TestUser user(kUser);
  SharedDaemon s;
  const std::int64_t roots = CancelledJob(s.d, 10);
  TempDir files;  // one the user may read
  ::chmod(files.path().c_str(), 0755);
  const std::string job_file = files.Write("lifecycle.toml", Job());
  const ProcessResult submitted = s.Cli(kUser, kUser, {"submit", job_file, "--no-wait"});
  BOOST_REQUIRE_MESSAGE(submitted.exit_code == 0, submitted.err);
  const std::int64_t theirs = std::stoll(submitted.out);
  s.d.WaitForStep(theirs, 10);
  BOOST_REQUIRE(s.Cli(kUser, kUser, {"cancel", std::to_string(theirs)}).exit_code == 0);
  s.d.Wait(theirs);

  const std::string other = std::to_string(roots);
  const ProcessResult resume = s.Cli(kUser, kUser, {"resume", other});
  BOOST_TEST(resume.exit_code == 1, resume.err);
  BOOST_TEST(resume.err.find("only its owner or root may resume it") != std::string::npos,
             resume.err);
  const ProcessResult rm = s.Cli(kUser, kUser, {"rm", other});
  BOOST_TEST(rm.exit_code == 1, rm.err);
  BOOST_TEST(rm.err.find("only its owner or root may remove it") != std::string::npos, rm.err);
  const ProcessResult prune = s.Cli(kUser, kUser, {"prune", "--older-than", "0s", "--json"});
  BOOST_TEST(prune.exit_code == 0, prune.err);
  const json removed = json::parse(prune.out)["removed"];
  BOOST_TEST(removed.size() == 1u, prune.out);
  BOOST_TEST(removed[0]["id"] == theirs);
  BOOST_TEST(s.d.Status(roots)["state"] == "cancelled");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace job_lifecycle_test
}  // namespace dtrain::testing
