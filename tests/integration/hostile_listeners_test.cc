// dtraind's listeners among hostile neighbours (issue 41, items 2, 5 and the dashboard's part of
// 11), with a real root daemon, real users and real sockets on loopback only: a user's flood of
// connections to the control socket, the TCP listener and the HTTP listener gets that user its
// shares of the caps and no more, the daemon does not spin, and another user's requests and job
// go through meanwhile; a stranger's frames before its hello are small, so forty of them of
// 16 MiB each leave the daemon's memory where it was; the dashboard answers only for its own host
// names (no DNS rebinding) and one user cannot hold every event stream. The daemon starts with
// the soft descriptor limit a systemd service gets (1024), as on the machines where this broke.
// The floods and the user-facing checks need root (users, setuid): skipped otherwise.
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <poll.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <latch>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "core/net/frame.h"
#include "core/net/frame_stream.h"
#include "daemon/server/control_server.h"
#include "daemon/server/listener_caps.h"
#include "integration/connection_flood.h"
#include "integration/daemon_fixture.h"
#include "integration/http_client.h"
#include "integration/shared_daemon.h"
#include "integration/test_user.h"

namespace dtrain::testing {
namespace hostile_listeners_test {

using json = nlohmann::json;
using namespace std::chrono_literals;
using server::ControlServer;
using server::kDefaultListenerCaps;

constexpr const char* kAttacker = "dtrain-hn-net-a";
constexpr const char* kVictim = "dtrain-hn-net-b";

// Descriptors the daemon may open beyond what the flood's connections take: a job's socket
// pairs and pipes, the CLI's connections, the connections refused but not yet closed.
constexpr std::size_t kSlack = 48;

constexpr const char* kVictimJob = R"(name = "victim"
[data]
format = "synthetic"
synthetic = "blobs"
rows = 2000
test_rows = 500
features = 6
classes = 3
[model]
type = "mlp"
hidden = [16]
[train]
epochs = 3
batch_size = 32
)";

std::size_t OpenFds(pid_t pid) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& fd :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    ++n;
  }
  return n;
}

// User plus system CPU time the process has used, in seconds (/proc/PID/stat).
double CpuSeconds(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string skip;
  for (int i = 3; i < 14; ++i) fields >> skip;  // state .. cmajflt: fields 3 to 13
  long utime = 0, stime = 0;
  fields >> utime >> stime;
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// The share of one core the process used over about a second (said in a message, `when`).
double CpuShareOverASecond(pid_t pid, const std::string& when) {
  const double before = CpuSeconds(pid);
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(1s);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double used = CpuSeconds(pid) - before;
  BOOST_TEST_MESSAGE("daemon CPU " << when << ": " << used << " s in " << wall << " s");
  return used / wall;
}

// A /proc/PID/status size in kB, e.g. "VmRSS:" or "VmHWM:" (the peak).
long StatusKb(pid_t pid, const std::string& field) {
  const std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  const std::size_t at = status.find(field);
  return at == std::string::npos ? -1 : std::stol(status.substr(at + field.size()));
}

// A root daemon with every listener on: the control socket (any user may connect), the TCP
// listener with a cluster key, and the HTTP listener; started with the soft descriptor limit a
// systemd service gets (1024), or with `fd_limit` as its soft and hard limits, through a shell
// that sets it and execs dtraind. `token`: the HTTP listener has one; `socket_mode`: who may open
// the control socket.
struct HostileDaemon {
  explicit HostileDaemon(bool token = false, const std::string& socket_mode = "0666",
                         std::size_t fd_limit = 0) {
    const std::string key = config_dir.Write("cluster.key", std::string(64, 'c') + "\n");
    ::chmod(key.c_str(), 0600);
    std::string text = "[daemon]\nsocket_mode = \"" + socket_mode +
                       "\"\nmax_jobs = 2\nhttp = \"127.0.0.1:" + std::to_string(http) + "\"\n";
    if (token) {
      const std::string path = config_dir.Write("http.token", std::string(64, 't') + "\n");
      ::chmod(path.c_str(), 0600);
      text += "http_token_file = \"" + path + "\"\n";
    }
    text += "[cluster]\nlisten = \"127.0.0.1:" + std::to_string(tcp) + "\"\nkey_file = \"" + key +
            "\"\n";
    const std::string config = config_dir.Write("dtraind.toml", text);
    ::chmod(home.path().c_str(), 0755);
    const std::string start = config_dir.Write(
        "start-dtraind", "#!/bin/sh\nulimit " +
                             (fd_limit > 0 ? "-n " + std::to_string(fd_limit) : "-S -n 1024") +
                             " || exit 1\nexec " + bins.dtraind + " \"$@\"\n");
    ::chmod(start.c_str(), 0755);
    d.emplace(std::vector<std::string>{"--config", config}, start);
    ::chmod(d->dir().path().c_str(), 0755);  // users reach the socket; state/ stays the daemon's
  }

  ProcessResult Cli(const TestUser& user, std::vector<std::string> args) const {
    std::vector<std::string> argv = {bins.dtrain, "--socket", d->socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunAs(user.name(), user.name(), argv, home.Path(""));
  }

  pid_t pid() const { return d->pid(); }

  // The HTTP status of GET `path` from this listener, as `user` asks it (curl).
  std::string HttpStatusAs(const TestUser& user, const std::string& path) const {
    const std::string url = "http://127.0.0.1:" + std::to_string(http) + path;
    const ProcessResult r = RunAs(user.name(), user.name(),
                                  {"/usr/bin/curl", "-s", "-o", "/dev/null", "-m", "30", "-w",
                                   "%{http_code}", url},
                                  home.Path(""));
    return r.out;
  }

  SharedBinaries bins;
  TempDir config_dir;
  TempDir home;  // the users' job files
  std::uint16_t http = FreePort();
  std::uint16_t tcp = FreePort();
  std::optional<DaemonFixture> d;
};

// A worker_channel connection of a stranger (no key) to the TCP listener, its request answered;
// nullopt when it could not be opened. No Boost.Test macro: senders' threads call it.
std::optional<net::FrameStream> OpenStrangersChannel(std::uint16_t port) {
  Result<net::FrameStream> stream = net::FrameStream::ConnectTcp("127.0.0.1", port, 5s);
  if (!stream.ok()) return std::nullopt;
  const std::string request = json{{"v", 1}, {"type", "worker_channel"}}.dump();
  if (!stream.value().WriteString(net::MessageType::kControl, 0, 0, request, 5s).ok()) {
    return std::nullopt;
  }
  Result<net::Frame> reply = stream.value().Read(5s);
  if (!reply.ok() || json::parse(reply.value().payload, nullptr, false).value("ok", false) != true) {
    return std::nullopt;
  }
  return std::move(stream).value();
}

net::FrameStream StrangersChannel(std::uint16_t port) {
  std::optional<net::FrameStream> stream = OpenStrangersChannel(port);
  BOOST_REQUIRE(stream.has_value());
  return std::move(*stream);
}

constexpr int kSenders = 40;

// kSenders connections, each opened by `open` (an optional stream; no Boost.Test macro in it)
// at once and sent all but the last byte of a frame of almost 16 MiB (so that a daemon that reads
// the payload holds all of it), closed once every one has sent what the daemon took; the daemon's
// peak RSS (VmHWM, kB) then.
template <typename Open>
long PeakWithLargeFrames(pid_t daemon, Open open) {
  const std::string big = net::EncodeFrame(net::MessageType::kControl, 0, net::kNoSender, 0,
                                           std::string((16u << 20) - 64, 'x'));
  std::latch sent(kSenders);
  std::atomic<int> opened{0};
  std::vector<std::thread> senders;
  for (int i = 0; i < kSenders; ++i) {
    senders.emplace_back([&] {
      std::optional<net::FrameStream> stream = open();
      const int fd = stream ? stream->fd() : -1;
      opened += stream ? 1 : 0;
      for (std::size_t at = 0; stream && at + 1 < big.size();) {
        const ssize_t n = ::send(fd, big.data() + at, big.size() - 1 - at, MSG_NOSIGNAL);
        pollfd writable{fd, POLLOUT, 0};
        if (n < 0 && errno == EAGAIN && ::poll(&writable, 1, 5000) > 0) continue;
        if (n <= 0) break;  // the daemon closed the connection
        at += static_cast<std::size_t>(n);
      }
      sent.arrive_and_wait();
    });
  }
  for (std::thread& t : senders) t.join();
  BOOST_TEST(opened == kSenders);
  return StatusKb(daemon, "VmHWM:");
}

// While `attacker`'s flood (opened, reopening what closes) holds its connections to every
// listener: the attacker's next request is refused, saying why; `victim`'s requests, job and
// another client's page go through; the daemon holds no more descriptors than the attacker's
// shares of `caps` (and some slack) beyond `baseline`.
void CheckOthersAreServed(const HostileDaemon& h, const TestUser& attacker, const TestUser& victim,
                          const server::ListenerCaps& caps, std::size_t baseline) {
  const ProcessResult own = h.Cli(attacker, {"list"});
  BOOST_TEST(own.exit_code != 0, own.out);
  BOOST_TEST(own.err.find("holds the most connections one client may (" +
                          std::to_string(caps.unix_socket.per_client) + ")") != std::string::npos,
             own.err);
  const std::string job = h.home.Write("victim.toml", kVictimJob);
  const ProcessResult submitted = h.Cli(victim, {"submit", job, "--no-wait", "--json"});
  BOOST_REQUIRE_MESSAGE(submitted.exit_code == 0, submitted.err);
  const std::int64_t id = json::parse(submitted.out)["id"].get<std::int64_t>();
  const ProcessResult status = h.Cli(victim, {"status", std::to_string(id)});
  BOOST_TEST(status.exit_code == 0, status.err);
  BOOST_TEST(StatusCode(Get(h.http, "/metrics")) == 200);
  const json ended = h.d->Wait(id);
  BOOST_TEST(ended["state"] == "succeeded", ended.dump() << h.d->LogTail(id));
  BOOST_TEST(ended["restarts"] == 0, ended.dump());

  const std::size_t held = OpenFds(h.pid()) - baseline;
  BOOST_TEST_MESSAGE("descriptors the daemon holds for 3 x 1,100 connections of one user: "
                     << held << " (its shares: " << caps.unix_socket.per_client << " + "
                     << caps.tcp.per_client << " + " << caps.http.per_client << ")");
  BOOST_TEST(held <= caps.unix_socket.per_client + caps.tcp.per_client + caps.http.per_client +
                         kSlack);
}

std::vector<FloodTarget> EveryListener(const HostileDaemon& h) {
  return {FloodTarget::Unix(h.d->socket(), 1100), FloodTarget::Tcp(h.tcp, 1100),
          FloodTarget::Tcp(h.http, 1100)};
}

BOOST_AUTO_TEST_SUITE(hostile_listeners)

// Item 2: 1,100 connections to each listener, reopened as they close.
BOOST_AUTO_TEST_CASE(a_connection_flood_leaves_other_users_requests_and_jobs_alone) {
  if (!Root()) return;
  TestUser attacker(kAttacker), victim(kVictim);
  HostileDaemon h;
  const std::size_t baseline = OpenFds(h.pid());
  ConnectionFlood flood(attacker.uid(), attacker.gid(), EveryListener(h));
  flood.WaitOpened();
  CheckOthersAreServed(h, attacker, victim, kDefaultListenerCaps, baseline);

  // Held still, the flood costs the daemon no CPU: no accept loop spins.
  flood.Hold();
  std::this_thread::sleep_for(500ms);  // the last connections reopened are refused
  BOOST_TEST(CpuShareOverASecond(h.pid(), "while the flood holds") < 0.5);
  BOOST_TEST(h.Cli(victim, {"list"}).exit_code == 0);
}

// Item 2, where descriptors are few: with a hard limit of 1024 the caps shrink (the listeners
// hold at most half of it), and the same flood still spares the other user and its job.
BOOST_AUTO_TEST_CASE(with_few_descriptors_the_caps_shrink_and_jobs_still_start) {
  if (!Root()) return;
  TestUser attacker(kAttacker), victim(kVictim);
  HostileDaemon h(false, "0666", 1024);
  const server::ListenerCaps caps = server::ScaledListenerCaps(1024);
  BOOST_TEST(caps.unix_socket.total + caps.tcp.total + caps.http.total <= 512u);
  const std::size_t baseline = OpenFds(h.pid());
  ConnectionFlood flood(attacker.uid(), attacker.gid(), EveryListener(h));
  flood.WaitOpened();
  CheckOthersAreServed(h, attacker, victim, caps, baseline);
}

// Item 2, the accept loop: a daemon whose descriptors are all in use (a limit too small for its
// caps) waits between failed accepts (EMFILE) instead of spinning, and serves again once the
// flood is gone.
BOOST_AUTO_TEST_CASE(a_daemon_out_of_descriptors_waits_instead_of_spinning) {
  if (!Root()) return;
  TestUser attacker(kAttacker);
  std::size_t idle = 0;  // what such a daemon holds with no connection
  {
    HostileDaemon probe;
    idle = OpenFds(probe.pid());
  }
  const std::size_t limit = idle + 3;
  HostileDaemon h(false, "0666", limit);
  // Root's connections (no per-uid share) and the attacker's take what is left.
  std::vector<net::FrameStream> roots;
  for (int i = 0; i < 16; ++i) {
    Result<net::FrameStream> stream = net::FrameStream::ConnectUnix(h.d->socket(), 1s);
    if (stream.ok()) roots.push_back(std::move(stream).value());
  }
  std::optional<ConnectionFlood> flood;
  flood.emplace(attacker.uid(), attacker.gid(), EveryListener(h));
  flood->WaitOpened();
  flood->Hold();
  std::this_thread::sleep_for(500ms);
  BOOST_TEST_MESSAGE("descriptors of a daemon limited to " << limit << ": " << OpenFds(h.pid()));
  BOOST_REQUIRE(OpenFds(h.pid()) >= limit);  // every one in use: each accept fails
  BOOST_TEST(CpuShareOverASecond(h.pid(), "at its descriptor limit") < 0.5);
  flood.reset();
  roots.clear();
  BOOST_TEST(h.d->Request({{"type", "version"}})["ok"] == true);
}

// Item 5: forty strangers each send a frame of 16 MiB after their worker_channel request.
BOOST_AUTO_TEST_CASE(strangers_frames_are_small_and_the_daemon_stays_small) {
  HostileDaemon h;
  const long before = StatusKb(h.pid(), "VmRSS:");
  const long peak = PeakWithLargeFrames(h.pid(), [&h] { return OpenStrangersChannel(h.tcp); });
  BOOST_TEST_MESSAGE("daemon RSS " << before / 1024 << " MB before, peak " << peak / 1024
                                   << " MB with " << kSenders << " strangers' 16 MiB frames");
  BOOST_TEST(peak - before < 200 * 1024);
  BOOST_TEST(h.d->Request({{"type", "version"}})["ok"] == true);

  // A frame one byte over the stranger's limit closes the connection; a hello fits.
  net::FrameStream over = StrangersChannel(h.tcp);
  BOOST_REQUIRE(over.WriteString(net::MessageType::kControl, 0, 0,
                                 std::string(ControlServer::kMaxPreAuthPayload + 1, ' '), 5s)
                    .ok());
  BOOST_TEST(!over.Read(5s).ok());
  net::FrameStream hello = StrangersChannel(h.tcp);
  const std::string made_up = json{{"v", 1}, {"type", "worker_hello"}, {"job", 1}, {"rank", 0},
                                   {"token", std::string(64, '0')}}.dump();
  BOOST_REQUIRE(hello.WriteString(net::MessageType::kControl, 0, 0, made_up, 5s).ok());
  Result<net::Frame> refused = hello.Read(5s);
  BOOST_REQUIRE(refused.ok());
  BOOST_TEST(json::parse(refused.value().payload)["code"] == "denied");
}

// Item 5, for clients of the control socket: their frames may be 16 MiB (job files), but one
// uid's being read hold ControlServer::kClientBudget at most.
BOOST_AUTO_TEST_CASE(one_users_large_requests_hold_at_most_its_budget) {
  HostileDaemon h;
  const long before = StatusKb(h.pid(), "VmRSS:");
  const long peak = PeakWithLargeFrames(h.pid(), [&h]() -> std::optional<net::FrameStream> {
    Result<net::FrameStream> stream = net::FrameStream::ConnectUnix(h.d->socket(), 5s);
    if (!stream.ok()) return std::nullopt;
    return std::move(stream).value();
  });
  BOOST_TEST_MESSAGE("daemon RSS " << before / 1024 << " MB before, peak " << peak / 1024
                                   << " MB with " << kSenders << " requests of 16 MiB of one uid");
  BOOST_TEST(peak - before < static_cast<long>(ControlServer::kClientBudget / 1024) + 100 * 1024);
  BOOST_TEST(h.d->Request({{"type", "version"}})["ok"] == true);
}

// Item 11, the dashboard: a page of another site whose name was re-pointed at 127.0.0.1 gets
// nothing from a dashboard without a token; with one, the token is the guard.
BOOST_AUTO_TEST_CASE(the_dashboard_answers_only_for_its_own_host_names) {
  HostileDaemon h;
  const std::string port = std::string(":").append(std::to_string(h.http));
  for (const std::string& host :
       std::vector<std::string>{"evil.example", "evil.example" + port, "127.0.0.1.nip.io" + port,
                                "localhost.evil.example" + port}) {
    const std::string r = HttpExchange(h.http, "GET /metrics HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
    BOOST_TEST(StatusCode(r) == 421, host << ": " << r);
    BOOST_TEST(Body(r).find("dtrain_") == std::string::npos, host);
    BOOST_TEST(StatusCode(HttpExchange(h.http, "GET /api/stream?state= HTTP/1.1\r\nHost: " + host +
                                                   "\r\n\r\n")) == 421);
  }
  for (const std::string& host : std::vector<std::string>{
           "localhost" + port, "127.0.0.1" + port, "[::1]" + port, "LocalHost", "127.0.0.1"}) {
    const std::string r = HttpExchange(h.http, "GET /metrics HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
    BOOST_TEST(StatusCode(r) == 200, host << ": " << r);
  }
  HostileDaemon with_token(true);
  const std::string bearer = "Authorization: Bearer " + std::string(64, 't') + "\r\n";
  BOOST_TEST(StatusCode(HttpExchange(with_token.http, "GET /metrics HTTP/1.1\r\nHost: "
                                     "dtrain.lab.example\r\n" + bearer + "\r\n")) == 200);
  BOOST_TEST(StatusCode(HttpExchange(with_token.http, "GET /metrics HTTP/1.1\r\nHost: "
                                     "evil.example\r\n\r\n")) == 401);
}

// Item 11, the dashboard: without a token it shows the jobs only to those who may ask the control
// socket for them: its owner, its group (here a user's own, as the unit's group dtrain), root.
BOOST_AUTO_TEST_CASE(the_dashboard_without_a_token_serves_only_the_users_of_the_socket) {
  if (!Root()) return;
  BOOST_REQUIRE_MESSAGE(std::filesystem::exists("/usr/bin/curl"), "needs curl");
  TestUser member(kAttacker), outsider(kVictim);
  HostileDaemon h(false, "0660");
  BOOST_REQUIRE(::chown(h.d->socket().c_str(), 0, member.gid()) == 0);
  BOOST_TEST(h.HttpStatusAs(member, "/metrics") == "200");
  BOOST_TEST(h.HttpStatusAs(member, "/") == "200");
  BOOST_TEST(h.HttpStatusAs(outsider, "/metrics") == "403");
  BOOST_TEST(h.HttpStatusAs(outsider, "/api/stream?state=") == "403");
  BOOST_TEST(h.HttpStatusAs(outsider, "/") == "403");
  const std::string as_root = Get(h.http, "/metrics");
  BOOST_TEST(StatusCode(as_root) == 200, as_root);
  // The control socket agrees: the outsider cannot ask it either.
  BOOST_TEST(h.Cli(outsider, {"list"}).exit_code != 0);
  BOOST_TEST(h.Cli(member, {"list"}).exit_code == 0);
}

// Item 11, the dashboard: one user opens 64 event streams (every stream there is); another
// client's page still gets its own.
BOOST_AUTO_TEST_CASE(one_user_cannot_hold_every_dashboard_stream) {
  if (!Root()) return;
  TestUser attacker(kAttacker);
  HostileDaemon h;
  const std::size_t baseline = OpenFds(h.pid());
  const std::string stream = "GET /api/stream?state= HTTP/1.1\r\nHost: localhost\r\n\r\n";
  ConnectionFlood flood(attacker.uid(), attacker.gid(),
                        {FloodTarget::Tcp(h.http,
                                          static_cast<int>(kDefaultListenerCaps.streams.total),
                                          stream)});
  flood.WaitOpened();
  std::this_thread::sleep_for(1s);  // every stream asked for and answered, some reopened
  flood.Hold();
  std::this_thread::sleep_for(500ms);
  const std::size_t held = OpenFds(h.pid()) - baseline;
  BOOST_TEST_MESSAGE("descriptors the daemon holds for one user's " <<
                     kDefaultListenerCaps.streams.total << " streams: " << held);
  BOOST_TEST(held <= kDefaultListenerCaps.streams.per_client + kSlack / 4);
  // Another client (root here) still gets a stream of its own.
  const std::string answer = StatusLine(h.http, stream);
  BOOST_TEST(answer == "HTTP/1.1 200", answer);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace hostile_listeners_test
}  // namespace dtrain::testing
