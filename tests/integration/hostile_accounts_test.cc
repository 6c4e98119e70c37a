// A root dtraind among hostile neighbours, as issue 41 tried it: a holder of the cluster key may
// start a worker only as a user with an account here and only in that user's own groups, and a
// local submitter only with a gid of its own; a job that floods its output fills the store only
// up to its log quota and a huge line is stored cut, without the daemon buffering it, and the
// job still ends as it should, also when its process runs on a peer (which must survive bytes
// that are not UTF-8); two daemons' job 1 share no data-plane token. Real processes, loopback
// only, bounded loops; the user tests need root (they create users), the others run as anyone.
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "core/net/auth.h"
#include "core/net/frame_stream.h"
#include "daemon/server/line_cutter.h"
#include "daemon/server/log_quota.h"
#include "integration/daemon_fixture.h"
#include "integration/shared_daemon.h"
#include "integration/test_user.h"

namespace dtrain::testing {
namespace hostile_accounts_test {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr const char* kUserA = "dtrain-hn-acct-a";
constexpr const char* kUserB = "dtrain-hn-acct-b";

std::string WriteKey(const TempDir& dir) {
  const std::string path = dir.Write("cluster.key", std::string(64, 'h') + "\n");
  ::chmod(path.c_str(), 0600);
  return path;
}

// A daemon configuration listening on loopback at `port` with the key at `key`, and `daemon` and
// `cluster` lines in those sections.
std::string Config(const TempDir& dir, const std::string& file, std::uint16_t port,
                   const std::string& key, const std::string& cluster = "",
                   const std::string& daemon = "") {
  return dir.Write(file, "[daemon]\n" + daemon + "[cluster]\nlisten = \"127.0.0.1:" +
                             std::to_string(port) + "\"\nkey_file = \"" + key + "\"\n" + cluster);
}

// One request over TCP as a holder of the cluster key; its first reply.
json KeyHolderRequest(std::uint16_t port, const std::string& key_path, json request) {
  const auto key = net::LoadClusterKey(key_path);
  BOOST_REQUIRE(key.ok());
  auto stream = net::FrameStream::ConnectTcp("127.0.0.1", port, 5s);
  BOOST_REQUIRE_MESSAGE(stream.ok(), stream.status().message());
  const Status auth = net::AuthenticateClient(stream.value(), key.value(), 5s);
  BOOST_REQUIRE_MESSAGE(auth.ok(), auth.message());
  request["v"] = 1;
  BOOST_REQUIRE(
      stream.value().WriteString(net::MessageType::kControl, 0, 0, request.dump(), 5s).ok());
  auto frame = stream.value().Read(30s);
  BOOST_REQUIRE_MESSAGE(frame.ok(), frame.status().message());
  return json::parse(frame.value().payload);
}

// The daemon's child processes (every thread's), from /proc.
std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::istringstream children(ReadFile(task.path().string() + "/children"));
    for (pid_t child = 0; children >> child;) out.push_back(child);
  }
  return out;
}

// A uid this host's user database does not know.
uid_t UnknownUid() {
  uid_t uid = 54321;
  while (::getpwuid(uid) != nullptr) ++uid;
  return uid;
}

// The gid of `name`, or `fallback` where the group does not exist.
gid_t GroupId(const char* name, gid_t fallback) {
  const group* g = ::getgrnam(name);
  return g != nullptr ? g->gr_gid : fallback;
}

// `user` a member of `group` while it lives (so the group can go with its user afterwards).
class GroupMember {
 public:
  GroupMember(std::string user, std::string group) : user_(std::move(user)), group_(std::move(group)) {
    const ProcessResult r = RunProcess({"/usr/bin/gpasswd", "--add", user_, group_}, "/tmp");
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  }
  ~GroupMember() { RunProcess({"/usr/bin/gpasswd", "--delete", user_, group_}, "/tmp"); }
  GroupMember(const GroupMember&) = delete;
  GroupMember& operator=(const GroupMember&) = delete;

 private:
  std::string user_, group_;
};

BOOST_AUTO_TEST_SUITE(hostile_accounts)

BOOST_AUTO_TEST_CASE(a_key_holder_starts_workers_only_as_accounts_in_their_own_groups) {
  if (!Root()) return;
  TestUser a(kUserA), b(kUserB);
  SharedBinaries bins;
  TempDir dir;
  const std::string key = WriteKey(dir);
  const std::uint16_t port = FreePort();
  DaemonFixture d({"--config", Config(dir, "d.toml", port, key)}, bins.dtraind);
  const std::string coordinator = "127.0.0.1:" + std::to_string(port);
  auto spawn = [&](std::int64_t uid, std::int64_t gid) {
    return KeyHolderRequest(port, key,
                            {{"type", "spawn_worker"}, {"job", 1}, {"rank", 0},
                             {"token", std::string(64, 'a')}, {"coordinator", coordinator},
                             {"uid", uid}, {"gid", gid}});
  };
  auto refused = [&](const json& reply, const std::string& why) {
    BOOST_TEST(reply["ok"] == false, reply.dump());
    BOOST_TEST(reply.value("code", "") == "denied", reply.dump());
    BOOST_TEST(reply.value("error", "").find(why) != std::string::npos, reply.dump());
  };
  const std::string who = "uid " + std::to_string(a.uid()) + " (" + kUserA + ")";
  const gid_t shadow = GroupId("shadow", 42);
  refused(spawn(a.uid(), shadow),
          "gid " + std::to_string(shadow) + " is not a group of " + who + " on this host");
  refused(spawn(a.uid(), 0), "gid 0 is not a group of " + who);
  refused(spawn(a.uid(), b.gid()), "gid " + std::to_string(b.gid()) + " is not a group of " + who);
  const uid_t stranger = UnknownUid();
  refused(spawn(stranger, 0), "uid " + std::to_string(stranger) + " has no account on this host");
  refused(spawn(stranger, a.gid()), "has no account on this host");
  refused(spawn(0, 0), "allow_root");
  BOOST_TEST(ChildrenOf(d.pid()).empty());  // nothing was started for any of them

  // A group of the user's own, from this host's database, is the user's to use.
  const GroupMember member(kUserA, kUserB);
  const json started = spawn(a.uid(), b.gid());
  BOOST_TEST(started["ok"] == true, started.dump());
  BOOST_TEST(started.contains("pid"), started.dump());
}

BOOST_AUTO_TEST_CASE(a_local_submitter_whose_gid_is_not_its_own_is_refused) {
  if (!Root()) return;
  TestUser a(kUserA);
  SharedBinaries bins;
  TempDir dir;
  const std::string config = dir.Write("d.toml", "[daemon]\nsocket_mode = \"0666\"\n");
  DaemonFixture d({"--config", config}, bins.dtraind);
  ::chmod(d.dir().path().c_str(), 0755);
  const std::string job = dir.Write(
      "job.toml", "name = \"g\"\n[data]\nformat = \"synthetic\"\nrows = 256\n[train]\nepochs = 1\n");
  ::chmod(dir.path().c_str(), 0755);
  ::chmod(job.c_str(), 0644);
  // setpriv keeps the user's uid but makes its gid 0, which the user database does not give it
  // (as a setgid program would): the socket's peer credentials say gid 0.
  const ProcessResult r = RunProcess(
      {"/usr/bin/setpriv", "--reuid=" + std::string(kUserA), "--regid=0", "--init-groups", "--",
       bins.dtrain, "--socket", d.socket(), "submit", job, "--no-wait"},
      dir.Path(""));
  BOOST_TEST(r.exit_code != 0, r.out);
  BOOST_TEST(r.err.find("gid 0 is not a group of uid " + std::to_string(a.uid()) + " (" + kUserA +
                        ") on this host") != std::string::npos,
             r.err);
  BOOST_TEST(d.Request({{"type", "list"}})["jobs"].size() == 0u);
  // With its own group it may.
  const ProcessResult own = RunAs(kUserA, kUserA, {bins.dtrain, "--socket", d.socket(), "submit",
                                                   job, "--json"},
                                  dir.Path(""));
  BOOST_TEST(own.exit_code == 0, own.err);
  BOOST_TEST(d.Request({{"type", "list"}})["jobs"].size() == 1u);
}

// ---------------------------------------------------------------------------------------------
// Log limits.

// A job that runs until cancelled: one process, or with `cluster` (a [cluster] section) more;
// `seed` makes two daemons' jobs differ in everything they compute.
std::string EndlessJob(int seed, const std::string& cluster = "") {
  return "name = \"endless\"\n[data]\nseed = " + std::to_string(seed) +
         "\nformat = \"synthetic\"\nrows = 2000\nfeatures = 16\n[model]\ntype = \"mlp\"\n"
         "hidden = [16]\n[train]\nepochs = 1000000\nthreads = 1\n" +
         cluster;
}

constexpr const char* kShortJob =
    "name = \"short\"\n[data]\nformat = \"synthetic\"\nrows = 256\n[train]\nepochs = 1\n";

std::uint64_t FileBytes(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t n = fs::file_size(path, ec);
  return ec ? 0 : static_cast<std::uint64_t>(n);
}

// The store's bytes on disk: the database and its write-ahead log.
std::uint64_t StoreBytes(const DaemonFixture& d) {
  const std::string db = d.dir().Path("state") + "/dtrain.db";
  return FileBytes(db) + FileBytes(db + "-wal");
}

// A field of /proc/PID/status in KiB ("VmRSS:", "VmHWM:").
std::uint64_t StatusKiB(pid_t pid, const std::string& field) {
  const std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  const std::size_t at = status.find(field);
  BOOST_REQUIRE(at != std::string::npos);
  return std::stoull(status.substr(at + field.size()));
}

// Every stored log line of job `id`, through the control socket.
std::vector<json> AllLogs(const DaemonFixture& d, std::int64_t id) {
  auto stream = net::FrameStream::ConnectUnix(d.socket(), 5s);
  BOOST_REQUIRE(stream.ok());
  const json logs = {{"v", 1}, {"type", "logs"}, {"id", id}};
  BOOST_REQUIRE(stream.value().WriteString(net::MessageType::kControl, 0, 0, logs.dump(), 5s).ok());
  std::vector<json> lines;
  for (;;) {
    auto frame = stream.value().Read(60s);
    BOOST_REQUIRE_MESSAGE(frame.ok(), frame.status().message());
    const json reply = json::parse(frame.value().payload);
    BOOST_REQUIRE_MESSAGE(reply.value("ok", false), reply.dump());
    for (const json& l : reply.value("lines", json::array())) lines.push_back(l);
    if (reply.contains("end")) return lines;
  }
}

// Writes all of `text` to `fd`, a process's stdout: the pipe to its daemon, so EPIPE means the
// daemon is gone.
void WriteAll(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    BOOST_REQUIRE_MESSAGE(n > 0 || errno == EINTR,
                          "write to the worker's stdout: " << std::strerror(errno));
    if (n > 0) text.remove_prefix(static_cast<std::size_t>(n));
  }
}

// SIGPIPE ignored while it lives: a write to a pipe whose daemon died fails instead of killing
// the test.
class NoSigpipe {
 public:
  NoSigpipe() : previous_(::signal(SIGPIPE, SIG_IGN)) {}
  ~NoSigpipe() { ::signal(SIGPIPE, previous_); }
  NoSigpipe(const NoSigpipe&) = delete;
  NoSigpipe& operator=(const NoSigpipe&) = delete;

 private:
  void (*previous_)(int);
};

BOOST_AUTO_TEST_CASE(a_flood_of_output_stops_at_the_log_quota_and_a_huge_line_is_cut) {
  const NoSigpipe no_sigpipe;
  TempDir dir;
  constexpr std::uint64_t kQuota = std::uint64_t{4} << 20;
  const std::string config = dir.Write("d.toml", "[daemon]\nlog_quota = \"4MiB\"\n");
  DaemonFixture d({"--config", config});
  const std::int64_t id = d.Submit(EndlessJob(1));
  json running = d.WaitForState(id, "running");
  for (int i = 0; i < 500 && running["workers"].empty(); ++i) {  // the row lands just after
    std::this_thread::sleep_for(10ms);
    running = d.Status(id);
  }
  BOOST_REQUIRE(running["workers"].size() == 1u);
  const pid_t worker = running["workers"][0]["pid"].get<pid_t>();
  const std::uint64_t store_before = StoreBytes(d);
  const std::uint64_t rss_before = StatusKiB(d.pid(), "VmRSS:");

  // What the job's owner can do to its own process: write to its stdout, the daemon's pipe.
  const int out = ::open(("/proc/" + std::to_string(worker) + "/fd/1").c_str(), O_WRONLY);
  BOOST_REQUIRE_MESSAGE(out >= 0, "open the worker's stdout: " << std::strerror(errno));
  constexpr std::size_t kHuge = std::size_t{64} << 20;
  {
    const std::string chunk(1 << 20, 'z');
    for (std::size_t i = 0; i < kHuge / chunk.size(); ++i) WriteAll(out, chunk);
    WriteAll(out, "\n");
  }
  const std::string flood_line = "flood " + std::string(94, 'f') + "\n";  // 101 bytes
  constexpr std::size_t kFloodLines = (std::size_t{100} << 20) / 101;
  {
    std::string block;
    for (int i = 0; i < 10000; ++i) block += flood_line;
    for (std::size_t i = 0; i < kFloodLines / 10000; ++i) WriteAll(out, block);
  }
  ::close(out);
  const std::uint64_t rss_peak = StatusKiB(d.pid(), "VmHWM:");

  // The job goes on and ends as asked.
  const json cancelled = d.Request({{"type", "cancel"}, {"id", id}});
  BOOST_REQUIRE_MESSAGE(cancelled["ok"] == true, cancelled.dump());
  BOOST_TEST(d.Wait(id)["state"] == "cancelled");
  const std::uint64_t store_after = StoreBytes(d);
  BOOST_TEST_MESSAGE("store " << store_before << " -> " << store_after << " bytes after "
                              << kHuge + kFloodLines / 10000 * 10000 * 101
                              << " bytes of output; daemon RSS " << rss_before << " KiB, peak "
                              << rss_peak << " KiB");
  // The store grew by the quota and its rows' overhead, not by the 164 MiB written.
  BOOST_TEST(store_after < store_before + 3 * kQuota);
  // The daemon never held the 64 MiB line (nor the flood) whole.
  BOOST_TEST(rss_peak < rss_before + (kHuge >> 10) / 2);

  const std::vector<json> lines = AllLogs(d, id);
  BOOST_REQUIRE(!lines.empty());
  // (The worker's own lines may land inside the huge one, which then ends early: the pipe is
  // shared, and only writes of up to PIPE_BUF bytes are atomic.)
  std::size_t cut = 0, flood = 0, reached = 0, so_far = 0;
  std::uint64_t stored = 0;
  const std::size_t longest = 4096 + server::CutNotice(kHuge).size();
  for (const json& l : lines) {
    const std::string text = l["line"].get<std::string>();
    if (l["stream"] != "daemon") stored += text.size() + server::LogQuota::kRowCost;
    BOOST_TEST(text.size() <= longest);
    if (text.starts_with(std::string(4096, 'z')) && text.ends_with(" bytes dropped]")) ++cut;
    if (text + "\n" == flood_line) ++flood;
    if (text.starts_with("log quota reached (4 MiB of lines this attempt)")) ++reached;
    if (text.starts_with("log quota reached: 1000 lines (") && text.ends_with(") dropped so far")) {
      ++so_far;
    }
  }
  BOOST_TEST(cut >= 1u);       // the huge line: its first 4 KiB, and how much was cut
  BOOST_TEST(reached == 1u);   // said once, when it happened
  BOOST_TEST(so_far == 1u);    // and the count so far, at 1000, 10000, ...
  BOOST_TEST(flood > 0u);
  BOOST_TEST(flood < kFloodLines);
  BOOST_TEST(stored <= kQuota);
  // The log ends with how much was dropped, then why the job ended.
  BOOST_REQUIRE(lines.size() >= 2u);
  const std::string summary = lines[lines.size() - 2]["line"].get<std::string>();
  BOOST_TEST(summary.starts_with("log quota reached: "), summary);
  const std::uint64_t dropped = std::stoull(summary.substr(std::string("log quota reached: ").size()));
  BOOST_TEST(dropped > kFloodLines / 2, summary);  // nearly all: 4 MiB holds under 20000
  BOOST_TEST(lines.back()["line"].get<std::string>().starts_with("cancelled by uid"));

  // The daemon serves the next job as before, with a quota of its own.
  const std::int64_t next = d.Submit(kShortJob);
  BOOST_TEST(d.Wait(next)["state"] == "succeeded");
  for (const json& l : AllLogs(d, next)) {
    BOOST_TEST(l["line"].get<std::string>().find("log quota") == std::string::npos);
  }
}

// Daemons A and B are peers on loopback; A coordinates a job whose process runs on B. What that
// process prints reaches A through B, which must neither die of a line that is not UTF-8 (it
// used to: json::dump threw in B's output handler) nor queue a flood without bound: B passes on
// at most its own quota, A stores at most its own, and the job ends as asked.
// The worker of a running job of `d`'s: its pid, once its row has landed.
pid_t RunningWorker(const DaemonFixture& d, std::int64_t id) {
  json running = d.WaitForState(id, "running");
  for (int i = 0; i < 500 && running["workers"].empty(); ++i) {
    std::this_thread::sleep_for(10ms);
    running = d.Status(id);
  }
  BOOST_REQUIRE(running["workers"].size() == 1u);
  return running["workers"][0]["pid"].get<pid_t>();
}

std::size_t Count(const std::vector<json>& lines, const std::string& part) {
  return static_cast<std::size_t>(std::count_if(lines.begin(), lines.end(), [&](const json& l) {
    return l.value("line", "").find(part) != std::string::npos;
  }));
}

// `lines` lines of 101 bytes written to the stdout of job `id`'s worker; once the stored lines
// hold `until` `count` times (the daemon reads the pipe as it pleases), the job cancelled; the
// lines the store kept of it. The worker shares the pipe (it prints its start lines while the
// flood goes in), and only a write of at most PIPE_BUF bytes is atomic: the flood goes in writes
// of whole lines of at most that, so that no line of the worker's lands inside a flood line.
std::vector<json> FloodThenCancel(const DaemonFixture& d, std::int64_t id, std::size_t lines,
                                  const std::string& until, std::size_t count) {
  const pid_t worker = RunningWorker(d, id);
  const int out = ::open(("/proc/" + std::to_string(worker) + "/fd/1").c_str(), O_WRONLY);
  BOOST_REQUIRE_MESSAGE(out >= 0, "open the worker's stdout: " << std::strerror(errno));
  const std::string line = "flood " + std::string(94, 'f') + "\n";
  const std::size_t per_write = PIPE_BUF / line.size();
  for (std::size_t done = 0; done < lines; done += per_write) {
    std::string text;
    for (std::size_t i = done; i < std::min(lines, done + per_write); ++i) text += line;
    WriteAll(out, text);  // one write: a pipe takes at most PIPE_BUF bytes whole
  }
  ::close(out);
  for (int i = 0; i < 3000 && Count(AllLogs(d, id), until) < count; ++i) {
    std::this_thread::sleep_for(20ms);
  }
  BOOST_REQUIRE(d.Request({{"type", "cancel"}, {"id", id}})["ok"] == true);
  d.Wait(id);
  return AllLogs(d, id);
}

// Trains until cancelled and prints nothing of its own (no evaluation, no progress lines): the
// flood is all its log.
constexpr const char* kQuietJob =
    "name = \"quiet\"\n[data]\nformat = \"synthetic\"\nrows = 2000\ntest_rows = 0\n"
    "features = 16\n[model]\ntype = \"mlp\"\nhidden = [16]\n[train]\nepochs = 1000000\n"
    "threads = 1\nlog_every = 100000000\n";

BOOST_AUTO_TEST_CASE(a_users_jobs_together_keep_at_most_its_log_quota_even_across_restarts) {
  const NoSigpipe no_sigpipe;
  TempDir dir;
  const std::string config = dir.Write("d.toml", "[limits]\nlog_quota_per_user = \"2MiB\"\n");
  DaemonFixture d({"--config", config});
  // Each flood alone is within the attempt's 64 MiB; two of them pass the user's 2 MiB.
  constexpr std::size_t kLines = 6000;  // 6000 x (101 + 128) bytes: 1.3 MiB a job
  constexpr const char* kReached = "uid 0's log quota reached (2 MiB";
  const std::vector<json> first =
      FloodThenCancel(d, d.Submit(kQuietJob), kLines, "flood ", kLines);
  BOOST_TEST(Count(first, "flood ") == kLines);
  const std::vector<json> second =
      FloodThenCancel(d, d.Submit(kQuietJob), kLines, kReached, 1);
  const std::size_t kept = Count(second, "flood ");
  BOOST_TEST(kept < kLines * 2 / 3, kept);
  BOOST_TEST(Count(second, "uid 0's log quota reached (2 MiB of lines of uid 0's jobs") == 1u);
  // A new daemon on the same store counts what the store holds: nothing more is kept.
  d.Stop(SIGTERM);
  d.Start();
  const std::vector<json> third = FloodThenCancel(d, d.Submit(kQuietJob), 100, kReached, 1);
  BOOST_TEST(Count(third, "flood ") == 0u);
  BOOST_TEST(Count(third, kReached) == 1u);  // said once, at once
  // Removing the user's jobs frees their share: a new job's lines are kept again.
  for (const std::int64_t id : {1, 2, 3}) {
    BOOST_TEST(d.Request({{"type", "rm"}, {"id", id}})["ok"] == true);
  }
  const std::vector<json> fourth = FloodThenCancel(d, d.Submit(kQuietJob), 100, "flood ", 100);
  BOOST_TEST(Count(fourth, "flood ") == 100u);
  BOOST_TEST(Count(fourth, kReached) == 0u);
}

BOOST_AUTO_TEST_CASE(a_workers_flood_on_a_peer_is_bounded_there_and_bad_bytes_harm_nothing) {
  const NoSigpipe no_sigpipe;
  TempDir dir;
  const std::string key = WriteKey(dir);
  const std::uint16_t port_a = FreePort(), port_b = FreePort();
  const std::string quota = "log_quota = \"4MiB\"\n";
  auto peer = [&](const char* name, std::uint16_t other) {
    return "name = \"" + std::string(name) + "\"\nallow_root = true\npeers = [\"127.0.0.1:" +
           std::to_string(other) + "\"]\n";
  };
  DaemonFixture b({"--config", Config(dir, "b.toml", port_b, key, peer("node-b", port_a), quota)});
  DaemonFixture a({"--config", Config(dir, "a.toml", port_a, key, peer("node-a", port_b), quota)});
  json nodes;
  for (int i = 0; i < 100; ++i) {  // the first heartbeat goes out at start
    nodes = a.Request({{"type", "nodes"}})["nodes"];
    if (nodes.size() == 2u && nodes[1]["state"] == "up") break;
    std::this_thread::sleep_for(100ms);
  }
  BOOST_REQUIRE_MESSAGE(nodes.size() == 2u && nodes[1]["state"] == "up", nodes.dump());
  const std::int64_t id = a.Submit(EndlessJob(1, "[cluster]\nhosts = [\"node-b\"]\n"));
  a.WaitForState(id, "running");
  std::vector<pid_t> hosted = ChildrenOf(b.pid());
  for (int i = 0; i < 500 && hosted.empty(); ++i) {
    std::this_thread::sleep_for(10ms);
    hosted = ChildrenOf(b.pid());
  }
  BOOST_REQUIRE(hosted.size() == 1u);
  const std::uint64_t store_before = StoreBytes(a);

  const int out = ::open(("/proc/" + std::to_string(hosted[0]) + "/fd/1").c_str(), O_WRONLY);
  BOOST_REQUIRE_MESSAGE(out >= 0, "open the worker's stdout: " << std::strerror(errno));
  WriteAll(out, "bad \xff\xfe bytes\n");
  const std::string block = [] {
    std::string lines;
    for (int i = 0; i < 10000; ++i) lines += "flood " + std::string(94, 'f') + "\n";
    return lines;
  }();
  for (int i = 0; i < 100; ++i) WriteAll(out, block);  // 96 MiB
  ::close(out);

  BOOST_TEST(b.Request({{"type", "version"}})["ok"] == true);  // B lives
  const json cancelled = a.Request({{"type", "cancel"}, {"id", id}});
  BOOST_REQUIRE_MESSAGE(cancelled["ok"] == true, cancelled.dump());
  BOOST_TEST(a.Wait(id)["state"] == "cancelled");
  BOOST_TEST(StoreBytes(a) < store_before + 3 * (std::uint64_t{4} << 20));
  std::size_t bad = 0, noted = 0;
  for (const json& l : AllLogs(a, id)) {
    const std::string text = l["line"].get<std::string>();
    if (text == "bad \uFFFD\uFFFD bytes") ++bad;
    if (text.starts_with("log quota reached (4 MiB of lines this attempt)")) ++noted;
  }
  BOOST_TEST(bad == 1u);    // its bad bytes came as U+FFFD
  BOOST_TEST(noted >= 1u);  // B's quota or A's, whichever was reached first
}

// ---------------------------------------------------------------------------------------------
// Data-plane tokens.

// Three processes: two async replicas and a shard, so data-plane connections.
constexpr const char* kThreeProcesses = "[cluster]\nworkers = 2\nmode = \"async\"\nservers = 1\n";

bool IsHexDigit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// Every run of exactly 64 lowercase hex digits in the writable anonymous memory of `pid` (its
// heap and arenas, where a process keeps the tokens it was given): what a user who can read
// their own worker's memory finds there.
std::set<std::string> TokensInMemory(pid_t pid) {
  std::set<std::string> found;
  const std::string proc = "/proc/" + std::to_string(pid);
  std::ifstream maps(proc + "/maps");
  const int mem = ::open((proc + "/mem").c_str(), O_RDONLY);
  BOOST_REQUIRE_MESSAGE(mem >= 0, "open " << proc << "/mem: " << std::strerror(errno));
  std::string line;
  std::string buffer;
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, perms, offset, device, inode, path;
    fields >> range >> perms >> offset >> device >> inode;
    std::getline(fields, path);
    path.erase(0, path.find_first_not_of(' '));
    if (perms.substr(0, 2) != "rw" || inode != "0" || (!path.empty() && path != "[heap]")) continue;
    const std::uint64_t begin = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    const std::uint64_t end = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
    if (end - begin > (std::uint64_t{256} << 20)) continue;
    buffer.resize(end - begin);
    const ssize_t n = ::pread(mem, buffer.data(), buffer.size(), static_cast<off_t>(begin));
    if (n <= 0) continue;
    std::size_t run = 0;
    for (std::size_t i = 0; i <= static_cast<std::size_t>(n); ++i) {
      if (i < static_cast<std::size_t>(n) && IsHexDigit(buffer[i])) {
        ++run;
        continue;
      }
      if (run == 64) found.insert(buffer.substr(i - 64, 64));
      run = 0;
    }
  }
  ::close(mem);
  return found;
}

// The pids of job `id`'s processes once all three are recorded.
std::vector<pid_t> WorkerPids(const DaemonFixture& d, std::int64_t id) {
  json job = d.WaitForState(id, "running");
  for (int i = 0; i < 500 && job["workers"].size() < 3u; ++i) {
    std::this_thread::sleep_for(10ms);
    job = d.Status(id);
  }
  BOOST_REQUIRE(job["workers"].size() == 3u);
  std::vector<pid_t> pids;
  for (const json& w : job["workers"]) pids.push_back(w["pid"].get<pid_t>());
  return pids;
}

// Daemons B and C hold the same cluster key, and each runs its job 1. A user whose job is C's job
// 1 can read every token in its processes' memory; none of them is one that B's job 1 holds in
// common (the data-plane token every process of an attempt has), so none admits them to B's
// job's listeners.
BOOST_AUTO_TEST_CASE(two_daemons_job_1_share_no_data_plane_token) {
  if (!Root()) return;  // reading another process's memory needs CAP_SYS_PTRACE under Yama
  TempDir dir;
  const std::string key = WriteKey(dir);
  const std::uint16_t port_b = FreePort(), port_c = FreePort();
  DaemonFixture b({"--config", Config(dir, "b.toml", port_b, key)});
  DaemonFixture c({"--config", Config(dir, "c.toml", port_c, key)});
  const std::int64_t job_b = b.Submit(EndlessJob(1, kThreeProcesses));
  const std::int64_t job_c = c.Submit(EndlessJob(2, kThreeProcesses));
  BOOST_REQUIRE(job_b == 1 && job_c == 1);
  const std::vector<pid_t> pids_b = WorkerPids(b, job_b), pids_c = WorkerPids(c, job_c);
  // Let the data-plane connections form: the shard has served a step.
  b.WaitForStep(job_b, 1);
  c.WaitForStep(job_c, 1);

  // What every process of B's attempt holds: its data-plane token among them.
  std::set<std::string> common_b = TokensInMemory(pids_b[0]);
  for (std::size_t i = 1; i < pids_b.size(); ++i) {
    const std::set<std::string> more = TokensInMemory(pids_b[i]);
    std::set<std::string> both;
    std::set_intersection(common_b.begin(), common_b.end(), more.begin(), more.end(),
                          std::inserter(both, both.end()));
    common_b = std::move(both);
  }
  BOOST_TEST(!common_b.empty(), "the scan found no token B's processes share");
  for (const pid_t pid : pids_c) {
    for (const std::string& token : TokensInMemory(pid)) {
      BOOST_TEST(common_b.count(token) == 0u, "C's process " << pid << " holds B's token");
    }
  }
  for (DaemonFixture* d : {&b, &c}) {
    BOOST_TEST(d->Request({{"type", "cancel"}, {"id", 1}})["ok"] == true);
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace hostile_accounts_test
}  // namespace dtrain::testing
