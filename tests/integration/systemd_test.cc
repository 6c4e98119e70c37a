// dtraind as systemd runs it (Type=notify): READY=1 once serving, STATUS= counts, WATCHDOG=1
// pings when WatchdogSec= is set, STOPPING=1 on SIGTERM, RELOADING=1/READY=1 around SIGHUP, and
// "<N>"-prefixed log lines without timestamps under journald. The notify socket is a datagram
// socket the test binds itself, exactly as systemd's is.
#include <boost/test/unit_test.hpp>

#include <sys/socket.h>
#include <sys/un.h>

#include <chrono>
#include <string>
#include <vector>

#include "daemon_fixture.h"

namespace dtrain::testing {
namespace systemd_test {

constexpr const char* kEndlessJob = R"(name = "endless"
[data]
format = "synthetic"
rows = 4000
features = 64
[model]
type = "mlp"
hidden = [128]
[train]
epochs = 1000000
)";

// Collects the datagrams dtraind sends to $NOTIFY_SOCKET.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof addr.sun_path - 1);
    BOOST_REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    timeval timeout{0, 100 * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  ~NotifySocket() { ::close(fd_); }

  // Reads datagrams until one contains `what` (or 20 s pass); returns all read so far.
  bool WaitFor(const std::string& what) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      char buffer[4096];
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) continue;
      messages_.emplace_back(buffer, static_cast<std::size_t>(n));
      if (messages_.back().find(what) != std::string::npos) return true;
    }
    return false;
  }
  const std::vector<std::string>& messages() const { return messages_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::vector<std::string> messages_;
};

BOOST_AUTO_TEST_CASE(speaks_the_systemd_notify_protocol_and_journald_log_format) {
  TempDir notify_dir;
  const std::string notify_path = notify_dir.Path("notify.sock");
  NotifySocket notify(notify_path);
  ::setenv("NOTIFY_SOCKET", notify_path.c_str(), 1);
  ::setenv("WATCHDOG_USEC", "400000", 1);  // WatchdogSec=0.4: a ping at least every 0.2 s
  ::setenv("JOURNAL_STREAM", "8:12345", 1);
  DaemonFixture d;
  ::unsetenv("NOTIFY_SOCKET");
  ::unsetenv("WATCHDOG_USEC");
  ::unsetenv("JOURNAL_STREAM");

  BOOST_TEST(notify.WaitFor("READY=1"));
  BOOST_TEST(notify.WaitFor("STATUS=0 running, 0 queued"));
  BOOST_TEST(notify.WaitFor("WATCHDOG=1"));
  BOOST_TEST(notify.WaitFor("WATCHDOG=1"));  // and again
  ::kill(d.pid(), SIGHUP);
  BOOST_TEST(notify.WaitFor("RELOADING=1") == false);  // no config file: nothing to reload
  const ProcessResult stopped = d.Stop(SIGTERM);
  BOOST_TEST(notify.WaitFor("STOPPING=1"));
  BOOST_TEST(stopped.exit_code == 0);
  // journald format: "<6>dtraind ready: ..." — a priority prefix and no timestamp.
  BOOST_TEST(stopped.err.rfind("<6>dtraind ready: socket ", 0) == 0u, stopped.err);
  BOOST_TEST(stopped.err.find("<6>SIGHUP: no configuration file to re-read") != std::string::npos,
             stopped.err);
}

BOOST_AUTO_TEST_CASE(sighup_rereads_the_config_without_touching_running_jobs) {
  TempDir dir;
  const std::string config = dir.Write("dtraind.toml", "[daemon]\nmax_jobs = 1\n");
  TempDir notify_dir;
  const std::string notify_path = notify_dir.Path("notify.sock");
  NotifySocket notify(notify_path);
  ::setenv("NOTIFY_SOCKET", notify_path.c_str(), 1);
  DaemonFixture d({"--config", config});
  ::unsetenv("NOTIFY_SOCKET");
  BOOST_TEST(notify.WaitFor("READY=1"));
  const std::int64_t id = d.Submit(kEndlessJob);
  const auto running = d.WaitForState(id, "running");
  dir.Write("dtraind.toml", "[daemon]\nmax_jobs = 3\nlog_level = \"debug\"\n");
  ::kill(d.pid(), SIGHUP);
  BOOST_TEST(notify.WaitFor("RELOADING=1"));
  BOOST_TEST(notify.WaitFor("READY=1"));
  // The running job kept its worker.
  const auto after = d.Status(id);
  BOOST_TEST(after["state"] == "running");
  BOOST_TEST(after["workers"].size() == 1u);
  BOOST_TEST(after["workers"][0]["pid"] == running["workers"][0]["pid"]);
  // A broken file keeps the previous configuration and the daemon keeps serving.
  dir.Write("dtraind.toml", "[daemon]\nmax_jobz = 3\n");
  ::kill(d.pid(), SIGHUP);
  BOOST_TEST(notify.WaitFor("READY=1"));
  BOOST_TEST(d.Request({{"type", "version"}})["ok"] == true);
  const ProcessResult stopped = d.Stop(SIGTERM);
  BOOST_TEST(stopped.err.find("configuration re-read: max_jobs 3") != std::string::npos, stopped.err);
  BOOST_TEST(stopped.err.find("max_jobz") != std::string::npos, stopped.err);
  BOOST_TEST(stopped.err.find("keeping the previous configuration") != std::string::npos);
}

}  // namespace systemd_test
}  // namespace dtrain::testing
