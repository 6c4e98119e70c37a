// The netns harness itself: hosts reach each other over the bridge and nothing else, partitions
// cut and heal, tbf limits bandwidth, teardown leaves no namespace and no process, leftovers of
// dead runs go, and a real dtraind (with its workers) runs inside a host. Skipped, with the
// reason, where network namespaces cannot be made (not root, no iproute2).
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cluster/netns_cluster.h"
#include "cluster/netns_ready.h"
#include "integration/daemon_fixture.h"

namespace dtrain::testing {
namespace netns_test {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// ---- TCP from whichever namespace the calling thread is in ----------------------------------

class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Socket& operator=(Socket&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

 private:
  int fd_;
};

sockaddr_in Endpoint(const std::string& address, std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  BOOST_REQUIRE_MESSAGE(::inet_pton(AF_INET, address.c_str(), &a.sin_addr) == 1, address);
  return a;
}

// Listens on address:<ephemeral port>; sets *port.
Socket Listen(const std::string& address, std::uint16_t* port) {
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  BOOST_REQUIRE(s.valid());
  sockaddr_in a = Endpoint(address, 0);
  BOOST_REQUIRE_MESSAGE(::bind(s.fd(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0,
                        "bind " << address << ": " << std::strerror(errno));
  BOOST_REQUIRE(::listen(s.fd(), 16) == 0);
  socklen_t len = sizeof a;
  BOOST_REQUIRE(::getsockname(s.fd(), reinterpret_cast<sockaddr*>(&a), &len) == 0);
  *port = ntohs(a.sin_port);
  return s;
}

// Connects within `timeout`; returns 0 and sets *out, or the error (ETIMEDOUT when it ran out).
int Connect(const std::string& address, std::uint16_t port, milliseconds timeout, Socket* out) {
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s.valid()) return errno;
  sockaddr_in a = Endpoint(address, port);
  if (::connect(s.fd(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (errno != EINPROGRESS) return errno;
    pollfd p{s.fd(), POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) == 0) return ETIMEDOUT;
    int error = 0;
    socklen_t len = sizeof error;
    ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) return error;
  }
  ::fcntl(s.fd(), F_SETFL, 0);  // blocking from here on
  *out = std::move(s);
  return 0;
}

bool Readable(const Socket& s, milliseconds timeout) {
  pollfd p{s.fd(), POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1;
}

// Accepts one connection within `timeout`; sets *peer to its address.
Socket Accept(const Socket& listener, milliseconds timeout, std::string* peer = nullptr) {
  if (!Readable(listener, timeout)) return Socket();
  sockaddr_in a{};
  socklen_t len = sizeof a;
  Socket s(::accept4(listener.fd(), reinterpret_cast<sockaddr*>(&a), &len, SOCK_CLOEXEC));
  if (peer != nullptr) {
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
    *peer = text;
  }
  return s;
}

bool SendAll(const Socket& s, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(s.fd(), data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

// Everything until the peer's EOF (or up to `limit` of silence).
std::string ReceiveAll(const Socket& s, milliseconds limit = milliseconds(20000)) {
  std::string data;
  char buffer[65536];
  while (Readable(s, limit)) {
    const ssize_t n = ::recv(s.fd(), buffer, sizeof buffer, 0);
    if (n <= 0) break;
    data.append(buffer, static_cast<std::size_t>(n));
  }
  return data;
}

// Sends `bytes` from host `from` to host `to` over a fresh connection; returns the throughput
// in Mbit/s from before connecting to the last byte received (so never more than the truth).
double TransferMbits(const NetnsCluster& cluster, int from, int to, std::size_t bytes) {
  std::uint16_t port = 0;
  Socket listener;
  {
    NetnsScope in(cluster, to);
    listener = Listen(cluster.Address(to), &port);
  }
  auto received = std::async(std::launch::async, [&listener] {
    Socket connection = Accept(listener, seconds(10));
    const std::size_t n = connection.valid() ? ReceiveAll(connection).size() : 0;
    return std::make_pair(n, Clock::now());
  });
  const auto start = Clock::now();
  Socket client;
  {
    NetnsScope in(cluster, from);
    BOOST_REQUIRE_EQUAL(Connect(cluster.Address(to), port, seconds(5), &client), 0);
  }
  BOOST_REQUIRE(SendAll(client, std::string(bytes, 'x')));
  ::shutdown(client.fd(), SHUT_WR);
  const auto [n, end] = received.get();
  BOOST_REQUIRE_EQUAL(n, bytes);
  const double secs = std::chrono::duration<double>(end - start).count();
  return static_cast<double>(bytes) * 8 / secs / 1e6;
}

std::set<std::string> NetnsNames() {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator("/run/netns")) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

std::set<std::string> RootLinks() {
  std::set<std::string> links;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/class/net")) {
    links.insert(entry.path().filename().string());
  }
  return links;
}

bool Gone(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return stat.empty() ||
         (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z');
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    if (end > start) lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

constexpr std::size_t kTransferBytes = 4u << 20;

BOOST_AUTO_TEST_SUITE(netns_cluster, *boost::unit_test::precondition(NetnsReady))

BOOST_AUTO_TEST_CASE(bytes_cross_the_bridge_between_hosts) {
  NetnsCluster cluster(3);
  BOOST_TEST(cluster.Address(0) == "10.77.0.1");
  BOOST_TEST(cluster.Address(2) == "10.77.0.3");
  std::uint16_t port = 0;
  Socket listener;
  {
    NetnsScope in(cluster, 0);
    listener = Listen(cluster.Address(0), &port);
  }
  auto echoed = std::async(std::launch::async, [&listener] {
    std::string peer;
    Socket connection = Accept(listener, seconds(10), &peer);
    if (connection.valid()) SendAll(connection, ReceiveAll(connection));
    return peer;
  });
  Socket client;
  {
    NetnsScope in(cluster, 2);
    BOOST_REQUIRE_EQUAL(Connect(cluster.Address(0), port, seconds(5), &client), 0);
  }
  const std::string message = "hello from host 2";
  BOOST_REQUIRE(SendAll(client, message));
  ::shutdown(client.fd(), SHUT_WR);
  BOOST_TEST(ReceiveAll(client) == message);
  BOOST_TEST(echoed.get() == cluster.Address(2));  // it came from host 2's eth0
}

BOOST_AUTO_TEST_CASE(hosts_have_loopback_and_only_their_own_network) {
  NetnsCluster cluster(2);

  // The host sees lo and eth0 with its address, nothing of the machine's.
  const ProcessResult links = cluster.Run(1, {"ip", "-o", "link", "show"});
  BOOST_REQUIRE_EQUAL(links.exit_code, 0);
  const std::vector<std::string> link_lines = Lines(links.out);
  BOOST_TEST_REQUIRE(link_lines.size() == 2u, links.out);
  BOOST_TEST(link_lines[0].find(": lo:") != std::string::npos);
  BOOST_TEST(link_lines[1].find(": eth0@") != std::string::npos);
  const ProcessResult addresses = cluster.Run(1, {"ip", "-o", "-4", "addr", "show"});
  BOOST_TEST(Lines(addresses.out).size() == 2u, addresses.out);
  BOOST_TEST(addresses.out.find("inet 127.0.0.1/8") != std::string::npos, addresses.out);
  BOOST_TEST(addresses.out.find("inet 10.77.0.2/24") != std::string::npos, addresses.out);

  // Loopback inside host 1 works.
  std::uint16_t inner_port = 0;
  Socket inner, client;
  {
    NetnsScope in(cluster, 1);
    inner = Listen("127.0.0.1", &inner_port);
    BOOST_TEST(Connect("127.0.0.1", inner_port, seconds(2), &client) == 0);
  }
  BOOST_TEST(Accept(inner, seconds(2)).valid());

  // The machine's loopback is another one: its listener is not there for host 1.
  std::uint16_t root_port = 0;
  Socket root_listener = Listen("127.0.0.1", &root_port);
  Socket from_root, from_host;
  BOOST_TEST(Connect("127.0.0.1", root_port, seconds(2), &from_root) == 0);
  {
    NetnsScope in(cluster, 1);
    BOOST_TEST(Connect("127.0.0.1", root_port, seconds(2), &from_host) == ECONNREFUSED);
    // Outside the cluster's /24 there is no route at all.
    BOOST_TEST(Connect("10.78.0.1", root_port, seconds(2), &from_host) == ENETUNREACH);
  }
  // And host 0's loopback listener is not reachable from host 1 either.
  std::uint16_t host0_port = 0;
  Socket host0_listener;
  {
    NetnsScope in(cluster, 0);
    host0_listener = Listen("127.0.0.1", &host0_port);
  }
  {
    NetnsScope in(cluster, 1);
    BOOST_TEST(Connect("127.0.0.1", host0_port, seconds(2), &from_host) == ECONNREFUSED);
    BOOST_TEST(Connect(cluster.Address(0), host0_port, seconds(2), &from_host) == ECONNREFUSED);
  }
}

BOOST_AUTO_TEST_CASE(run_and_spawn_report_output_exit_timeouts_and_failures) {
  NetnsCluster cluster(1);
  const ProcessResult r = cluster.Run(0, {"sh", "-c", "echo out; echo err >&2; exit 3"});
  BOOST_TEST(r.exit_code == 3);
  BOOST_TEST(r.out == "out\n");
  BOOST_TEST(r.err == "err\n");

  const auto start = Clock::now();
  const ProcessResult late = cluster.Run(0, {"sleep", "30"}, milliseconds(300));
  BOOST_TEST(late.signal == SIGKILL);
  BOOST_TEST(late.err.find("killed after 300 ms") != std::string::npos, late.err);
  BOOST_TEST(std::chrono::duration_cast<milliseconds>(Clock::now() - start).count() < 10000);

  NetnsProcess env =
      cluster.Spawn(0, {"sh", "-c", "echo \"$DTR_A $DTR_B\""}, {"DTR_A=one", "DTR_B=two"});
  BOOST_TEST(env.Wait().out == "one two\n");
  BOOST_CHECK_THROW(cluster.Spawn(0, {"/nonexistent/program"}), std::runtime_error);
  BOOST_CHECK_THROW(cluster.Spawn(0, {"no-such-program-anywhere"}), std::runtime_error);

  NetnsProcess term = cluster.Spawn(0, {"sleep", "30"});
  BOOST_TEST(term.Running());
  BOOST_TEST(term.Stop(seconds(5)).signal == SIGTERM);
  BOOST_TEST(!term.Running());
}

BOOST_AUTO_TEST_CASE(a_link_taken_down_partitions_the_host_until_it_comes_back) {
  NetnsCluster cluster(3);
  std::uint16_t port = 0;
  Socket listener;
  {
    NetnsScope in(cluster, 0);
    listener = Listen(cluster.Address(0), &port);
  }
  // A connection from host 1 that lives through the partition.
  Socket before;
  {
    NetnsScope in(cluster, 1);
    BOOST_REQUIRE_EQUAL(Connect(cluster.Address(0), port, seconds(5), &before), 0);
  }
  Socket before_accepted = Accept(listener, seconds(5));
  BOOST_REQUIRE(before_accepted.valid());

  cluster.SetLinkUp(1, false);
  {
    NetnsScope in(cluster, 1);
    Socket s;
    const auto start = Clock::now();
    BOOST_TEST(Connect(cluster.Address(0), port, seconds(1), &s) != 0);
    const auto waited = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
    BOOST_TEST(waited.count() < 5000);
  }
  {
    NetnsScope in(cluster, 2);  // the others still talk
    Socket s;
    BOOST_TEST(Connect(cluster.Address(0), port, seconds(5), &s) == 0);
    BOOST_TEST(Accept(listener, seconds(5)).valid());
  }
  // What host 1 sends meanwhile does not arrive (silence, not a reset)...
  BOOST_REQUIRE(SendAll(before, "sent during the partition"));
  BOOST_TEST(!Readable(before_accepted, milliseconds(700)));

  cluster.SetLinkUp(1, true);
  // ...until the link is back: TCP retransmits it.
  BOOST_TEST(Readable(before_accepted, seconds(15)));
  char buffer[64] = {};
  const ssize_t n = ::recv(before_accepted.fd(), buffer, sizeof buffer, 0);
  BOOST_TEST(std::string(buffer, n > 0 ? static_cast<std::size_t>(n) : 0) ==
             "sent during the partition");
  // And new connections work again (the neighbour entry may need a moment).
  int error = -1;
  const auto deadline = Clock::now() + seconds(10);
  while (error != 0 && Clock::now() < deadline) {
    NetnsScope in(cluster, 1);
    Socket s;
    error = Connect(cluster.Address(0), port, seconds(2), &s);
  }
  BOOST_TEST(error == 0, std::strerror(error));
}

BOOST_AUTO_TEST_CASE(tbf_limits_a_hosts_bandwidth_in_both_directions) {
  NetnsCluster cluster(3);
  const double rate = 80;  // Mbit/s
  const double unlimited = TransferMbits(cluster, 1, 0, kTransferBytes);
  BOOST_TEST_MESSAGE("unlimited host 1 -> host 0: " << unlimited << " Mbit/s");

  cluster.LimitBandwidth(1, "80mbit");
  const ProcessResult shown = cluster.Run(1, {"tc", "qdisc", "show", "dev", "eth0"});
  BOOST_TEST(shown.out.find("tbf") != std::string::npos, shown.out);
  const double out_of_1 = TransferMbits(cluster, 1, 0, kTransferBytes);
  const double into_1 = TransferMbits(cluster, 0, 1, kTransferBytes);
  BOOST_TEST_MESSAGE("limited to " << rate << " Mbit/s: host 1 -> host 0 " << out_of_1
                                   << " Mbit/s, host 0 -> host 1 " << into_1 << " Mbit/s");
  BOOST_TEST(out_of_1 < 2 * rate);
  BOOST_TEST(into_1 < 2 * rate);
  BOOST_TEST(out_of_1 < unlimited);
  // Shaped, not broken: the link still carries a good share of its rate.
  BOOST_TEST(out_of_1 > rate / 4);
  BOOST_TEST(into_1 > rate / 4);

  cluster.RemoveBandwidthLimit(1);
  const ProcessResult cleared = cluster.Run(1, {"tc", "qdisc", "show", "dev", "eth0"});
  BOOST_TEST(cleared.out.find("tbf") == std::string::npos, cleared.out);
  const double after = TransferMbits(cluster, 1, 0, kTransferBytes);
  BOOST_TEST_MESSAGE("limit removed: host 1 -> host 0 " << after << " Mbit/s");
  BOOST_TEST(after > out_of_1);
}

BOOST_AUTO_TEST_CASE(destroying_the_cluster_leaves_no_namespace_and_no_process) {
  const std::set<std::string> root_links = RootLinks();
  std::vector<std::string> names;
  std::optional<NetnsProcess> sleeper;  // outlives the cluster
  pid_t orphan = -1;                    // started by a shell, in no handle at all
  {
    NetnsCluster cluster(2);
    names = {cluster.Namespace(0), cluster.Namespace(1), cluster.BridgeNamespace()};
    const std::set<std::string> listed = NetnsNames();
    for (const std::string& name : names) BOOST_TEST(listed.count(name) == 1u, name);
    // Nothing was configured in the machine's namespace.
    BOOST_TEST((RootLinks() == root_links));

    sleeper.emplace(cluster.Spawn(0, {"sleep", "600"}));
    const std::string pid_file = cluster.HostDir(1) + "/orphan.pid";
    NetnsProcess shell =
        cluster.Spawn(1, {"sh", "-c", "sleep 600 & echo $! > " + pid_file + "; wait"});
    const auto deadline = Clock::now() + seconds(10);
    while (Lines(ReadFile(pid_file)).empty() && Clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(5));
    }
    orphan = std::stoi(ReadFile(pid_file));
    BOOST_TEST((cluster.Pids(0) == std::vector<pid_t>{sleeper->pid()}));
    const std::vector<pid_t> in_1 = cluster.Pids(1);
    BOOST_TEST(std::count(in_1.begin(), in_1.end(), orphan) == 1);
  }  // the shell's handle kills the shell; the orphan is the cluster's to kill
  bool timed_out = false;  // (then WaitFor killed it: the cluster did not)
  const ProcessResult slept = sleeper->WaitFor(seconds(5), &timed_out);
  BOOST_TEST(!timed_out);
  BOOST_TEST(slept.signal == SIGKILL);
  BOOST_TEST(Gone(orphan));
  if (!Gone(orphan)) ::kill(orphan, SIGKILL);

  const std::set<std::string> listed = NetnsNames();
  for (const std::string& name : names) BOOST_TEST(listed.count(name) == 0u, name);
  const ProcessResult ip_list = RunProcess({FindProgram("ip"), "netns", "list"}, "/tmp");
  BOOST_TEST(ip_list.exit_code == 0);
  for (const std::string& name : names) {
    BOOST_TEST(ip_list.out.find(name) == std::string::npos, name);
  }
  BOOST_TEST((RootLinks() == root_links));
}

BOOST_AUTO_TEST_CASE(leftovers_of_dead_runs_are_removed_and_live_ones_kept) {
  TempDir dir;
  const std::string ip = FindProgram("ip");
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = "dtr" + std::to_string(dead) + "-0-h0";
  const std::string live = "dtr" + std::to_string(::getpid()) + "-foreign-h0";
  BOOST_REQUIRE_EQUAL(RunProcess({ip, "netns", "add", stale}, dir.Path("")).exit_code, 0);
  BOOST_REQUIRE_EQUAL(RunProcess({ip, "netns", "add", live}, dir.Path("")).exit_code, 0);
  struct Remove {
    std::string ip, dir;
    std::vector<std::string> names;
    ~Remove() {
      for (const std::string& n : names) RunProcess({ip, "netns", "del", n}, dir);
    }
  } remove{ip, dir.Path(""), {stale, live}};
  // A process a crashed run left inside.
  ChildProcess left =
      StartProcess({ip, "netns", "exec", stale, FindProgram("sleep"), "600"}, dir.Path(""));
  const auto deadline = Clock::now() + seconds(10);
  while (NetnsInode("/proc/" + std::to_string(left.pid()) + "/ns/net") !=
             NetnsInode("/run/netns/" + stale) &&
         Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }

  NetnsCluster cluster(1);
  const std::set<std::string> listed = NetnsNames();
  BOOST_TEST(listed.count(stale) == 0u);
  BOOST_TEST(listed.count(live) == 1u);
  BOOST_TEST(left.Wait().signal == SIGKILL);
}

BOOST_AUTO_TEST_CASE(a_dtraind_runs_in_each_host_with_its_own_state) {
  const std::string dtraind = EnvPath("DTRAIND_BIN");
  const std::string dtrain = EnvPath("DTRAIN_BIN");
  NetnsCluster cluster(2);
  std::vector<NetnsDaemon> daemons;
  for (int host = 0; host < cluster.hosts(); ++host) {
    daemons.push_back(cluster.StartDaemon(host, dtraind));
  }
  BOOST_TEST(daemons[0].state_dir != daemons[1].state_dir);
  for (int host = 0; host < cluster.hosts(); ++host) {
    const NetnsDaemon& d = daemons[static_cast<std::size_t>(host)];
    BOOST_TEST_CONTEXT("host " << host) {
      BOOST_TEST(NetnsInode("/proc/" + std::to_string(d.process.pid()) + "/ns/net") ==
                 NetnsInode("/run/netns/" + cluster.Namespace(host)));
      // The CLI inside the host reaches that host's daemon.
      const ProcessResult v =
          cluster.Run(host, {dtrain, "--socket", d.socket, "version", "--json"});
      BOOST_REQUIRE_MESSAGE(v.exit_code == 0, v.err);
      const nlohmann::json version = nlohmann::json::parse(v.out, nullptr, false);
      BOOST_REQUIRE(!version.is_discarded());
      BOOST_TEST(version["daemon"]["pid"] == d.process.pid());
      BOOST_TEST(std::filesystem::exists(d.state_dir + "/dtrain.db"));
    }
  }

  // A job of two workers in host 1: they rendezvous over that host's own loopback.
  const std::string job = cluster.HostDir(1) + "/job.toml";
  std::ofstream(job) << "name = \"in-netns\"\n"
                        "[data]\nformat = \"synthetic\"\nsynthetic = \"blobs\"\nrows = 960\n"
                        "classes = 3\n"
                        "[model]\ntype = \"mlp\"\nhidden = [8]\n"
                        "[train]\nepochs = 0\nsteps = 20\nbatch_size = 16\n"
                        "[cluster]\nworkers = 2\nmode = \"sync\"\n";
  const ProcessResult submitted = cluster.Run(
      1, {dtrain, "--socket", daemons[1].socket, "submit", "--json", job}, seconds(120));
  BOOST_REQUIRE_MESSAGE(submitted.exit_code == 0, submitted.err);
  const nlohmann::json ended = nlohmann::json::parse(submitted.out, nullptr, false);
  BOOST_REQUIRE(!ended.is_discarded());
  BOOST_TEST(ended["state"] == "succeeded", ended.dump());
  BOOST_TEST(ended["workers"].size() == 2u);
  // Recorded in host 1's store only.
  const ProcessResult listed0 =
      cluster.Run(0, {dtrain, "--socket", daemons[0].socket, "list", "--json"});
  const ProcessResult listed1 =
      cluster.Run(1, {dtrain, "--socket", daemons[1].socket, "list", "--json"});
  BOOST_TEST(listed0.out.find("in-netns") == std::string::npos, listed0.out);
  BOOST_TEST(listed1.out.find("in-netns") != std::string::npos, listed1.out);

  for (NetnsDaemon& d : daemons) {
    const ProcessResult stopped = d.process.Stop(seconds(20));
    BOOST_TEST(stopped.exit_code == 0, stopped.err);
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace netns_test
}  // namespace dtrain::testing
