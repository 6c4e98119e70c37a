// Real dtraind processes with TCP listeners on loopback: who may talk to a daemon over TCP, and
// what daemons learn of each other. Every refused caller must leave the daemon exactly as it was:
// no job row, no worker process.
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "core/net/auth.h"
#include "core/net/frame_stream.h"
#include "integration/daemon_fixture.h"

namespace dtrain::testing {
namespace cluster_auth_test {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kJob =
    "name = \"tcp\"\n[data]\nformat = \"synthetic\"\nrows = 256\n[train]\nepochs = 1\n";

std::string WriteKey(const TempDir& dir, const std::string& name, const std::string& secret) {
  const std::string path = dir.Write(name, secret + "\n");
  ::chmod(path.c_str(), 0600);
  return path;
}

// A daemon config file with a [cluster] section.
std::string ClusterConfig(const TempDir& dir, const std::string& file, std::uint16_t port,
                          const std::string& key_path, const std::string& name,
                          const std::vector<std::uint16_t>& peers = {}, bool allow_root = true) {
  std::string text = "[cluster]\nlisten = \"127.0.0.1:" + std::to_string(port) + "\"\n";
  if (allow_root) text += "allow_root = true\n";
  if (!key_path.empty()) text += "key_file = \"" + key_path + "\"\n";
  if (!name.empty()) text += "name = \"" + name + "\"\n";
  if (!peers.empty()) {
    text += "peers = [";
    for (std::size_t i = 0; i < peers.size(); ++i) {
      text += (i > 0 ? ", " : "") + std::string("\"127.0.0.1:") + std::to_string(peers[i]) + "\"";
    }
    text += "]\n";
  }
  return dir.Write(file, text);
}

// `dtrain --host 127.0.0.1:PORT [--key-file KEY] ARGS...`.
ProcessResult Remote(const TempDir& dir, std::uint16_t port, const std::string& key,
                     std::vector<std::string> args) {
  std::vector<std::string> argv = {EnvPath("DTRAIN_BIN"), "--host",
                                   "127.0.0.1:" + std::to_string(port)};
  if (!key.empty()) argv.insert(argv.end(), {"--key-file", key});
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, dir.Path(""));
}

// The daemon's child processes, from /proc (every thread's children).
std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::istringstream children(ReadFile(task.path().string() + "/children"));
    for (pid_t child = 0; children >> child;) out.push_back(child);
  }
  return out;
}

// The daemon did nothing for a refused caller: no job row, no worker process.
void CheckUntouched(const DaemonFixture& d) {
  const json list = d.Request({{"type", "list"}});
  BOOST_TEST(list["jobs"].size() == 0u, list.dump());
  BOOST_TEST(ChildrenOf(d.pid()).empty());
}

// One control frame each way on a raw connection.
json Exchange(net::FrameStream& stream, const std::string& payload) {
  BOOST_REQUIRE(stream.WriteString(net::MessageType::kControl, 0, 0, payload, 5s).ok());
  auto frame = stream.Read(5s);
  BOOST_REQUIRE_MESSAGE(frame.ok(), frame.status().message());
  return json::parse(frame.value().payload);
}

BOOST_AUTO_TEST_SUITE(cluster_auth)

BOOST_AUTO_TEST_CASE(uid_0_over_tcp_is_refused_unless_allow_root) {
  TempDir dir;
  const std::string key = WriteKey(dir, "cluster.key", "the lab's shared secret, 32 bytes+");
  const std::uint16_t port = FreePort();
  DaemonFixture d({"--config", ClusterConfig(dir, "d.toml", port, key, "node-1", {}, false)});
  const std::string job = dir.Write("job.toml", kJob);
  if (::getuid() != 0) {
    BOOST_TEST_MESSAGE("skipped: only root's client names uid 0");
    return;
  }
  const ProcessResult root = Remote(dir, port, key, {"submit", job, "--no-wait"});
  BOOST_TEST(root.exit_code == 1, root.err);
  BOOST_TEST(root.err.find("uid 0 may not act over TCP") != std::string::npos, root.err);
  BOOST_TEST(root.err.find("allow_root") != std::string::npos, root.err);
  CheckUntouched(d);
  // Queries need no identity.
  const ProcessResult list = Remote(dir, port, key, {"list"});
  BOOST_TEST(list.exit_code == 0, list.err);
}

BOOST_AUTO_TEST_CASE(a_client_with_the_key_may_submit_over_tcp_and_others_may_not) {
  TempDir dir;
  const std::string key = WriteKey(dir, "cluster.key", "the lab's shared secret, 32 bytes+");
  const std::string wrong = WriteKey(dir, "wrong.key", "somebody else's secret, 32 bytes+");
  const std::uint16_t port = FreePort();
  DaemonFixture d({"--config", ClusterConfig(dir, "d.toml", port, key, "node-1")});
  const std::string job = dir.Write("job.toml", kJob);

  // No key, and the wrong key: refused before any request is read.
  const ProcessResult anonymous = Remote(dir, port, "", {"submit", job, "--no-wait"});
  BOOST_TEST(anonymous.exit_code == 1, anonymous.err);
  BOOST_TEST(anonymous.err.find("requires the cluster key") != std::string::npos, anonymous.err);
  const ProcessResult impostor = Remote(dir, port, wrong, {"submit", job, "--no-wait"});
  BOOST_TEST(impostor.exit_code == 1, impostor.err);
  BOOST_TEST(impostor.err.find("could not prove it holds the cluster key") != std::string::npos,
             impostor.err);
  CheckUntouched(d);

  // The key holder submits, and the job runs as if submitted locally.
  const ProcessResult submitted = Remote(dir, port, key, {"submit", job, "--json"});
  BOOST_TEST(submitted.exit_code == 0, submitted.err);
  const json list = d.Request({{"type", "list"}});
  BOOST_REQUIRE(list["jobs"].size() == 1u);
  BOOST_TEST(d.Wait(list["jobs"][0]["id"].get<std::int64_t>())["state"] == "succeeded");
}

BOOST_AUTO_TEST_CASE(a_replayed_handshake_is_refused) {
  TempDir dir;
  const std::string key_path = WriteKey(dir, "cluster.key", "the lab's shared secret, 32 bytes+");
  const std::uint16_t port = FreePort();
  DaemonFixture d({"--config", ClusterConfig(dir, "d.toml", port, key_path, "node-1")});
  const auto key = net::LoadClusterKey(key_path);
  BOOST_REQUIRE(key.ok());
  auto connect = [&] {
    auto s = net::FrameStream::ConnectTcp("127.0.0.1", port, 5s);
    BOOST_REQUIRE(s.ok());
    return std::move(s).value();
  };

  // A genuine handshake, recorded by an eavesdropper.
  net::ClientHandshake genuine(key.value());
  net::FrameStream first = connect();
  const std::string hello = genuine.Hello();
  const json challenge = Exchange(first, hello);
  auto proof = genuine.OnChallenge(challenge.dump());
  BOOST_REQUIRE(proof.ok());
  const json verdict = Exchange(first, proof.value());
  BOOST_REQUIRE(genuine.OnResult(verdict.dump()).ok());

  // Its hello again: refused as a replay.
  net::FrameStream second = connect();
  const json replayed_hello = Exchange(second, hello);
  BOOST_TEST(replayed_hello["ok"] == false, replayed_hello.dump());

  // Its proof against a fresh challenge: refused (the daemon's nonce is new).
  net::ClientHandshake fresh(key.value());
  net::FrameStream third = connect();
  const json new_challenge = Exchange(third, fresh.Hello());
  BOOST_REQUIRE(new_challenge["ok"] == true);
  const json replayed_proof = Exchange(third, proof.value());
  BOOST_TEST(replayed_proof["ok"] == false, replayed_proof.dump());
  BOOST_TEST(replayed_proof["code"] == "denied", replayed_proof.dump());
  // Either way the connection is closed: nothing more is read from it.
  BOOST_TEST(!third.Read(2s).ok());
  CheckUntouched(d);
}

BOOST_AUTO_TEST_CASE(a_daemon_without_a_key_answers_only_queries_over_loopback_tcp) {
  TempDir dir;
  const std::uint16_t port = FreePort();
  DaemonFixture d({"--config", ClusterConfig(dir, "d.toml", port, "", "")});
  const std::string job = dir.Write("job.toml", kJob);
  const ProcessResult submit = Remote(dir, port, "", {"submit", job, "--no-wait"});
  BOOST_TEST(submit.exit_code == 1, submit.err);
  BOOST_TEST(submit.err.find("only answers queries") != std::string::npos, submit.err);
  CheckUntouched(d);
  const ProcessResult list = Remote(dir, port, "", {"list", "--json"});
  BOOST_TEST(list.exit_code == 0, list.err);
  BOOST_TEST(json::parse(list.out).size() == 0u);
}

BOOST_AUTO_TEST_CASE(a_key_file_readable_by_others_stops_the_daemon_at_start) {
  TempDir dir;
  const std::string key = WriteKey(dir, "cluster.key", "the lab's shared secret, 32 bytes+");
  ::chmod(key.c_str(), 0644);
  const ProcessResult r = RunProcess(
      {EnvPath("DTRAIND_BIN"), "--socket", dir.Path("d.sock"), "--state-dir", dir.Path("state"),
       "--config", ClusterConfig(dir, "d.toml", FreePort(), key, "node-1")},
      dir.Path(""));
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(r.err.find("chmod 600") != std::string::npos, r.err);
}

BOOST_AUTO_TEST_CASE(peers_see_each_other_up_and_a_killed_peer_down) {
  TempDir dir;
  const std::string key = WriteKey(dir, "cluster.key", "the lab's shared secret, 32 bytes+");
  const std::uint16_t port1 = FreePort(), port2 = FreePort();
  DaemonFixture one({"--config", ClusterConfig(dir, "1.toml", port1, key, "node-1", {port2})});
  DaemonFixture two({"--config", ClusterConfig(dir, "2.toml", port2, key, "node-2", {port1})});
  auto nodes = [&] {
    const ProcessResult r = Remote(dir, port1, key, {"nodes", "--json"});
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return json::parse(r.out);
  };
  json seen;
  for (int i = 0; i < 100; ++i) {  // the first heartbeat goes out at start
    seen = nodes();
    if (seen.size() == 2u && seen[1]["state"] == "up") break;
    std::this_thread::sleep_for(100ms);
  }
  BOOST_REQUIRE(seen.size() == 2u);
  BOOST_TEST(seen[0]["name"] == "node-1");
  BOOST_TEST(seen[0]["self"] == true);
  BOOST_TEST(seen[1]["name"] == "node-2", seen.dump());
  BOOST_TEST(seen[1]["state"] == "up", seen.dump());
  BOOST_TEST(seen[1]["cores"].get<int>() >= 1);

  two.Stop(SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  // The bound: shown as down within 5 s.
  while (std::chrono::steady_clock::now() - killed < 5s) {
    seen = nodes();
    if (seen[1]["state"] == "down") break;
    std::this_thread::sleep_for(100ms);
  }
  BOOST_TEST(seen[1]["state"] == "down", seen.dump());
  BOOST_TEST(!seen[1]["error"].get<std::string>().empty());
  BOOST_TEST_MESSAGE("peer down after " << std::chrono::duration<double>(
                                               std::chrono::steady_clock::now() - killed)
                                               .count()
                                        << " s");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cluster_auth_test
}  // namespace dtrain::testing
