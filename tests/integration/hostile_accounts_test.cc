// A root dtraind among hostile neighbours, as issue 41 tried it: a holder of the cluster key may
// start a worker only as a user with an account here and only in that user's own groups.
// Real processes, loopback only, bounded loops; the tests need root (they create users).
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
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
#include "integration/daemon_fixture.h"
#include "integration/test_user.h"

namespace dtrain::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr const char* kUserA = "dtrain-hn-acct-a";
constexpr const char* kUserB = "dtrain-hn-acct-b";

bool Root() {
  if (::getuid() == 0) return true;
  BOOST_TEST_MESSAGE("skipped: needs root to create users and to run a system daemon");
  return false;
}

std::string WriteKey(const TempDir& dir) {
  const std::string path = dir.Write("cluster.key", std::string(64, 'h') + "\n");
  ::chmod(path.c_str(), 0600);
  return path;
}

// A daemon configuration listening on loopback at `port` with the key at `key`.
std::string Config(const TempDir& dir, const std::string& file, std::uint16_t port,
                   const std::string& key) {
  return dir.Write(file, "[cluster]\nlisten = \"127.0.0.1:" + std::to_string(port) +
                             "\"\nkey_file = \"" + key + "\"\n");
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

BOOST_AUTO_TEST_CASE(a_local_submitter_whose_gid_is_not_its_own_is_refused_at_start) {
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
  // (as a setgid program would).
  const ProcessResult r = RunProcess(
      {"/usr/bin/setpriv", "--reuid=" + std::string(kUserA), "--regid=0", "--init-groups", "--",
       bins.dtrain, "--socket", d.socket(), "submit", job, "--json"},
      dir.Path(""));
  const json list = d.Request({{"type", "list"}});
  BOOST_REQUIRE_MESSAGE(list["jobs"].size() == 1u, r.out + r.err);
  const json ended = d.Wait(list["jobs"][0]["id"].get<std::int64_t>());
  BOOST_TEST(ended["state"] == "failed", ended.dump());
  BOOST_TEST(ended.value("reason", "").find("gid 0 is not a group of uid " +
                                            std::to_string(a.uid())) != std::string::npos,
             ended.dump());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace dtrain::testing
