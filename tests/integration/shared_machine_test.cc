// A root dtraind on a machine shared by several people, each a real user: a job's processes run
// as its submitter (read from /proc), carry no secret on their command line or in their
// environment, and open the files the job names with the submitter's rights only — a data path
// the submitter re-points at the cluster key, the daemon's store or a file only root can read
// fails with "Permission denied" and no byte of that file reaches any output; another user may
// look at a job but not cancel it, read its logs or export it; a daemon started by an ordinary
// user runs only that user's jobs. The daemon runs binaries copied where every user may run them.
// Root only (it creates a user): skipped otherwise.
#include <boost/test/unit_test.hpp>

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "integration/daemon_fixture.h"
#include "integration/shared_daemon.h"
#include "integration/test_user.h"

namespace dtrain::testing {
namespace shared_machine_test {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

// One line of /proc/PID/status, e.g. "Uid:" -> "1001\t1001\t1001\t1001".
std::string StatusField(pid_t pid, const std::string& field) {
  const std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  const std::size_t at = status.find("\n" + field);
  if (at == std::string::npos) return "";
  const std::size_t begin = status.find_first_not_of(" \t", at + field.size() + 1);
  return status.substr(begin, status.find('\n', begin) - begin);
}

std::string ProcFile(pid_t pid, const std::string& name) {
  std::string text = ReadFile("/proc/" + std::to_string(pid) + "/" + name);
  for (char& c : text) c = c == '\0' ? ' ' : c;
  return text;
}

// Everything a user can see of a job: its status with events, its logs and its metrics.
std::string EverythingShown(const DaemonFixture& d, std::int64_t id) {
  std::string shown = d.Request({{"type", "status"}, {"id", id}}).dump();
  shown += d.Request({{"type", "metrics"}, {"id", id}}).dump();
  auto stream = net::FrameStream::ConnectUnix(d.socket(), 5s);
  BOOST_REQUIRE(stream.ok());
  const json logs = {{"v", 1}, {"type", "logs"}, {"id", id}};
  BOOST_REQUIRE(stream.value().WriteString(net::MessageType::kControl, 0, 0, logs.dump(), 5s).ok());
  for (;;) {
    auto frame = stream.value().Read(30s);
    BOOST_REQUIRE(frame.ok());
    shown += frame.value().payload;
    if (json::parse(frame.value().payload).contains("end")) break;
  }
  return shown;
}

// Whether `text` holds 32 or more hex digits in a row: the shape of every dtrain token and key.
bool HoldsHexRun(const std::string& text) {
  static const std::regex run("[0-9a-fA-F]{32,}");
  return std::regex_search(text, run);
}

// A job that runs until cancelled: two async replicas and a shard, so three processes.
constexpr const char* kEndlessJob = R"(name = "endless"
[data]
format = "synthetic"
rows = 2000
features = 16
[model]
type = "mlp"
hidden = [16]
[train]
epochs = 1000000
threads = 1
[cluster]
workers = 2
mode = "async"
servers = 1
)";

BOOST_AUTO_TEST_SUITE(shared_machine)

BOOST_AUTO_TEST_CASE(a_jobs_processes_run_as_its_submitter_and_hold_no_secret) {
  if (!Root()) return;
  TestUser user;
  SharedDaemon s;
  TempDir home;
  ::chmod(home.path().c_str(), 0755);
  const std::string job = home.Write("endless.toml", kEndlessJob);
  const ProcessResult submitted = s.Cli(kUserName, kUserName, {"submit", job, "--no-wait", "--json"});
  BOOST_REQUIRE_MESSAGE(submitted.exit_code == 0, submitted.err);
  const std::int64_t id = json::parse(submitted.out)["id"].get<std::int64_t>();
  json running = s.d.WaitForState(id, "running");
  for (int i = 0; i < 500 && running["workers"].size() < 3u; ++i) {  // rows land just after
    std::this_thread::sleep_for(10ms);
    running = s.d.Status(id);
  }
  BOOST_TEST(running["owner"] == user.uid());

  const std::string key_text(64, 'c');
  const std::string ids = std::to_string(user.uid());
  BOOST_REQUIRE(running["workers"].size() == 3u);
  for (const json& w : running["workers"]) {
    const pid_t pid = w["pid"].get<pid_t>();
    BOOST_TEST(StatusField(pid, "Uid:") == ids + "\t" + ids + "\t" + ids + "\t" + ids, w.dump());
    const std::string gid = std::to_string(user.gid());
    BOOST_TEST(StatusField(pid, "Gid:") == gid + "\t" + gid + "\t" + gid + "\t" + gid);
    BOOST_TEST(StatusField(pid, "CapEff:") == "0000000000000000");
    for (const char* file : {"cmdline", "environ"}) {
      const std::string text = ProcFile(pid, file);
      BOOST_TEST(!text.empty());
      BOOST_TEST(!HoldsHexRun(text), file << " of rank " << w["rank"] << ": " << text);
      BOOST_TEST(text.find("token") == std::string::npos, text);
      BOOST_TEST(text.find(key_text) == std::string::npos);
    }
    const std::string env = ProcFile(pid, "environ");
    BOOST_TEST(env.find("NOTIFY_SOCKET") == std::string::npos, env);
    BOOST_TEST(env.find("HOME=/root") == std::string::npos, env);
    // Nothing of the daemon's is open in it: only its standard streams, its connection and what
    // it opened itself (sockets, shared memory, /dev/null) — never the store.
    for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
      std::error_code ec;
      const std::string target = fs::read_symlink(fd.path(), ec).string();
      BOOST_TEST(target.find("dtrain.db") == std::string::npos, target);
      BOOST_TEST(target.find("cluster.key") == std::string::npos, target);
    }
  }

  // Another user sees the job but may not cancel it, read its logs or export it.
  const ProcessResult status = s.Cli("nobody", "nogroup", {"status", std::to_string(id)});
  BOOST_TEST(status.exit_code == 0, status.err);
  for (std::vector<std::string> args :
       {std::vector<std::string>{"cancel", std::to_string(id)},
        std::vector<std::string>{"logs", std::to_string(id)},
        std::vector<std::string>{"export", std::to_string(id), "-o", "/tmp/stolen.dtm"}}) {
    const ProcessResult refused = s.Cli("nobody", "nogroup", args);
    BOOST_TEST(refused.exit_code == 1, args[0] << ": " << refused.err);
    BOOST_TEST(refused.err.find("only its owner or root may") != std::string::npos, refused.err);
  }
  BOOST_TEST(!fs::exists("/tmp/stolen.dtm"));
  BOOST_TEST(s.d.Status(id)["state"] == "running");
  // Its owner may.
  const ProcessResult logs = s.Cli(kUserName, kUserName, {"logs", std::to_string(id)});
  BOOST_TEST(logs.exit_code == 0, logs.err);
  const ProcessResult cancelled = s.Cli(kUserName, kUserName, {"cancel", std::to_string(id)});
  BOOST_TEST(cancelled.exit_code == 0, cancelled.err);
  BOOST_TEST(s.d.Wait(id)["state"] == "cancelled");
}

BOOST_AUTO_TEST_CASE(a_data_path_swapped_to_a_secret_gives_permission_denied_and_no_byte_of_it) {
  if (!Root()) return;
  TestUser user;
  SharedDaemon s;
  // The user's own data: a libsvm file and, for each target, a link to it.
  TempDir data;
  ::chmod(data.path().c_str(), 0755);
  const std::string train = data.Write("train.svm", "1 1:0.5 2:1\n0 3:1\n1 4:0.25\n0 1:1\n");
  const std::string root_only = data.Write("root-only", "MARKER-only-root-may-read-this\n");
  ::chmod(root_only.c_str(), 0600);
  const std::string store = s.d.dir().Path("state/dtrain.db");
  const std::vector<std::pair<std::string, std::string>> targets = {
      {"the cluster key", SharedDaemon::KeyPath()}, {"the store", store}, {"a root file", root_only}};
  BOOST_REQUIRE(::chown(data.path().c_str(), user.uid(), user.gid()) == 0);

  // Held in the queue behind a job of its own while the links still point at the user's data.
  const std::string endless = data.Write("endless.toml", kEndlessJob);
  const ProcessResult blocker = s.Cli(kUserName, kUserName, {"submit", endless, "--no-wait", "--json"});
  BOOST_REQUIRE_MESSAGE(blocker.exit_code == 0, blocker.err);
  const std::int64_t blocker_id = json::parse(blocker.out)["id"].get<std::int64_t>();
  s.d.WaitForState(blocker_id, "running");
  std::vector<std::int64_t> ids;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const std::string link = data.Path("link" + std::to_string(i) + ".svm");
    RunAs(kUserName, kUserName, {"/bin/ln", "-s", train, link}, data.Path(""));
    const std::string job = data.Write("swap" + std::to_string(i) + ".toml",
                                       "[data]\nformat = \"libsvm\"\nfeatures = 4\ntrain = \"" +
                                           link + "\"\n[train]\nepochs = 1\n");
    const ProcessResult submitted = s.Cli(kUserName, kUserName, {"submit", job, "--no-wait", "--json"});
    BOOST_REQUIRE_MESSAGE(submitted.exit_code == 0, submitted.err);  // the link was fine then
    ids.push_back(json::parse(submitted.out)["id"].get<std::int64_t>());
    const ProcessResult swapped =
        RunAs(kUserName, kUserName, {"/bin/ln", "-sfn", targets[i].second, link}, data.Path(""));
    BOOST_REQUIRE_MESSAGE(swapped.exit_code == 0, swapped.err);
  }
  BOOST_REQUIRE(s.Cli(kUserName, kUserName, {"cancel", std::to_string(blocker_id)}).exit_code == 0);

  const std::string key_text(64, 'c');
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const json ended = s.d.Wait(ids[i]);
    BOOST_TEST(ended["state"] == "failed", targets[i].first << ": " << ended.dump());
    const std::string reason = ended["reason"].get<std::string>();
    BOOST_TEST(reason.find("Permission denied") != std::string::npos, targets[i].first << ": " << reason);
    const std::string shown = EverythingShown(s.d, ids[i]);
    BOOST_TEST(shown.find(key_text.substr(0, 8)) == std::string::npos, targets[i].first);
    BOOST_TEST(shown.find("MARKER") == std::string::npos, targets[i].first);
    BOOST_TEST(shown.find("SQLite format") == std::string::npos, targets[i].first);
    BOOST_TEST(s.d.Request({{"type", "checkpoints"}, {"id", ids[i]}})["checkpoints"].empty());
  }
}

BOOST_AUTO_TEST_CASE(a_daemon_of_an_ordinary_user_runs_only_that_users_jobs) {
  if (!Root()) return;
  TestUser user;
  SharedBinaries bins;
  TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  BOOST_REQUIRE(::chown(dir.path().c_str(), user.uid(), user.gid()) == 0);
  const std::string config = dir.Write("dtraind.toml", "[daemon]\nsocket_mode = \"0666\"\n");
  const std::string socket = dir.Path("dtraind.sock");
  ChildProcess daemon = StartProcess(AsUser(kUserName, kUserName,
                                            {bins.dtraind, "--config", config, "--socket", socket,
                                             "--state-dir", dir.Path("state")}),
                                     dir.Path(""));
  const auto cli = [&](const std::string& who, const std::string& group,
                       std::vector<std::string> args) {
    std::vector<std::string> argv = {bins.dtrain, "--socket", socket};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunAs(who, group, argv, dir.Path(""));
  };
  for (int i = 0; i < 300 && cli(kUserName, kUserName, {"list"}).exit_code != 0; ++i) {
    std::this_thread::sleep_for(50ms);
  }
  const std::string job = dir.Write("job.toml", "[data]\nformat = \"synthetic\"\nrows = 256\n"
                                                "[train]\nepochs = 1\n");
  const ProcessResult stranger = cli("nobody", "nogroup", {"submit", job, "--no-wait"});
  BOOST_TEST(stranger.exit_code == 1, stranger.err);
  BOOST_TEST(stranger.err.find("runs only that user's jobs") != std::string::npos, stranger.err);
  const ProcessResult own = cli(kUserName, kUserName, {"submit", job, "--json"});
  BOOST_TEST(own.exit_code == 0, own.err);
  BOOST_TEST(json::parse(own.out)["state"] == "succeeded", own.out);
  daemon.Signal(SIGTERM);
  daemon.Wait();
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace shared_machine_test
}  // namespace dtrain::testing
