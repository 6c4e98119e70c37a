#include "daemon/server/daemon.h"

#include <signal.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <asio/thread_pool.hpp>
#include <filesystem>
#include <optional>

#include "core/net/auth.h"
#include "core/net/host_info.h"
#include "daemon/server/async.h"
#include "daemon/server/control_server.h"
#include "daemon/server/job_manager.h"
#include "daemon/server/listener_caps.h"
#include "daemon/server/logger.h"
#include "daemon/server/membership.h"
#include "daemon/server/supervisor.h"
#include "daemon/server/sweep_driver.h"
#include "daemon/server/web_server.h"
#include "daemon/store/store.h"

namespace dtrain::server {
namespace {

using namespace std::chrono_literals;

int ResolveCores(int configured) { return configured > 0 ? configured : net::OnlineCores(); }

// A daemon started as root runs each job as its submitter; any other runs only its own user's.
bool RunsAsOwner() { return ::geteuid() == 0; }

bool IsWildcard(const std::string& host) { return host == "0.0.0.0" || host == "::"; }

// The IPv4 address this host's peers reach it at, where its workers open their data-plane
// sockets: [cluster] advertise; else the listen address unless it is a wildcard (or IPv6); else
// this host's end of the route to the first peer that has one; else loopback (no peers).
std::string DataHost(const config::DaemonConfig& c) {
  if (!c.advertise.empty()) return net::ResolveIPv4(c.advertise).value_or(c.advertise);
  const std::optional<net::HostPort> listen = net::SplitHostPort(c.listen);
  if (listen && !IsWildcard(listen->host)) {
    if (std::optional<std::string> mine = net::ResolveIPv4(listen->host)) return *mine;
  }
  for (const std::string& peer : c.peers) {
    const std::optional<net::HostPort> to = net::SplitHostPort(peer);
    if (!to) continue;
    if (std::optional<std::string> mine = net::RouteSourceIPv4(to->host)) return *mine;
  }
  return "127.0.0.1";
}

// What workers on peers dial to reach this coordinator: the listen address, with the data host
// in place of a wildcard.
std::string CoordinatorAddress(const config::DaemonConfig& c, const std::string& data_host) {
  const std::optional<net::HostPort> listen = net::SplitHostPort(c.listen);
  if (!listen || !IsWildcard(listen->host)) return c.listen;
  return net::JoinHostPort(data_host, listen->port);
}

std::string NodeName(const config::DaemonConfig& c) {
  return c.name.empty() ? net::LocalHostName() : c.name;
}

// `data_host`: DataHost of the configuration, found once at start.
ClusterSide Cluster(const DaemonOptions& options, const net::ClusterKey* key,
                    const Membership* membership, Supervisor* supervisor,
                    const std::string& data_host) {
  const config::DaemonConfig& c = options.config;
  ClusterSide side;
  side.listen = c.listen;
  side.key = key;
  side.allow_root = c.allow_root;
  side.run_as_owner = RunsAsOwner();
  side.membership = membership;
  side.node_name = NodeName(c);
  side.supervisor = supervisor;
  side.worker_exe = options.worker_exe;
  side.key_file = c.key_file;
  side.data_host = data_host;
  side.log_quota = c.log_quota;
  return side;
}

ManagerSettings Settings(const config::DaemonConfig& c, const std::string& worker_exe,
                         const Membership* membership, const std::string& data_host,
                         const Logger* log) {
  ManagerSettings s;
  s.warn = [log](std::string_view message) { log->Warning(message); };
  s.run_as_owner = RunsAsOwner();
  s.max_jobs = c.max_jobs;
  s.cores = ResolveCores(c.cores);
  s.grace = std::chrono::milliseconds(static_cast<long>(c.grace_seconds * 1000));
  s.max_restarts = c.max_restarts;
  s.limits = c.limits;
  s.data_host = data_host;
  s.node_name = NodeName(c);
  s.coordinator = CoordinatorAddress(c, data_host);
  s.key_file = c.key_file;
  s.log_quota = c.log_quota;
  if (!c.peers.empty()) {
    s.nodes = [membership] {
      std::vector<NodeCapacity> nodes;
      for (const PeerState& p : membership->Snapshot()) {
        nodes.push_back({p.name.empty() ? p.address : p.name, p.address, p.cores, p.up,
                         !p.name.empty()});
      }
      return nodes;
    };
  }
  s.worker_exe = worker_exe;
  return s;
}

Logger::Level LevelOf(const config::DaemonConfig& c) {
  auto level = Logger::ParseLevel(c.log_level);
  return level.ok() ? level.value() : Logger::Level::kInfo;
}

Status MakeDirectory(const std::string& path, std::filesystem::perms mode) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Status::Error(path + ": cannot create: " + ec.message());
  std::filesystem::permissions(path, mode, std::filesystem::perm_options::replace, ec);
  return Status::Ok();
}

// Loads the key file at `path` into *key (nothing when `path` is empty); false, having logged
// why, when it cannot.
bool LoadKeyFile(const std::string& path, const std::string& setting, Logger& log,
                 std::optional<net::ClusterKey>* key) {
  if (path.empty()) return true;
  Result<net::ClusterKey> loaded = net::LoadClusterKey(path);
  if (!loaded.ok()) {
    log.Error(setting + ": " + loaded.status().message());
    return false;
  }
  *key = std::move(loaded).value();
  return true;
}

// Everything the daemon owns, in the order it is built (and the reverse it is torn down).
class Daemon {
 public:
  // `cluster_key`, `http_token`: when the configuration names a key file, a token file. `caps`:
  // the listeners', sized to the daemon's descriptor limit.
  Daemon(const DaemonOptions& options, std::unique_ptr<store::Store> run_store,
         std::optional<net::ClusterKey> cluster_key, std::optional<net::ClusterKey> http_token,
         const ListenerCaps& caps)
      : options_(options),
        log_(LevelOf(options.config)),
        store_(std::move(run_store)),
        key_(std::move(cluster_key)),
        http_token_(std::move(http_token)),
        data_host_(DataHost(options.config)),
        caps_(caps),
        membership_(options.config.peers, key(), NodeName(options.config), {}),
        pool_(2),
        supervisor_(io_, static_cast<std::size_t>(options.config.max_log_line)),
        jobs_(io_, pool_, *store_, supervisor_,
              Settings(options.config, options.worker_exe, &membership_, data_host_, &log_)),
        sweeps_(io_, pool_, *store_, jobs_),
        server_(io_, pool_, *store_, jobs_, options.config.socket, options.config.socket_mode,
                Cluster(options, key(), &membership_, &supervisor_, data_host_), caps_),
        web_(MakeWebServer()),
        signals_(io_, SIGTERM, SIGINT),
        hangup_(io_, SIGHUP),
        status_timer_(io_),
        watchdog_timer_(io_) {}

  int Run() {
    Status listening = server_.Listen();
    if (listening.ok() && web_ != nullptr) listening = web_->Listen();
    if (!listening.ok()) {
      log_.Error(listening.message());
      return 1;
    }
    asio::co_spawn(io_, Main(), asio::detached);
    io_.run();
    pool_.join();
    return exit_code_;
  }

 private:
  const net::ClusterKey* key() const { return key_ ? &*key_ : nullptr; }

  asio::awaitable<void> Main() {
    Status reconciled = co_await jobs_.Reconcile();
    if (!reconciled.ok()) {
      log_.Error("cannot resume the jobs in the store: " + reconciled.message());
      exit_code_ = 1;
      server_.Close();
      io_.stop();
      co_return;
    }
    // After the jobs: a sweep's trials that exist are recovered with them, never created again.
    jobs_.SetJobEndSink([this](std::int64_t) { sweeps_.JobEnded(); });
    if (Status sweeps = co_await sweeps_.Start(); !sweeps.ok()) {
      log_.Error("cannot resume the sweeps in the store: " + sweeps.message());
      exit_code_ = 1;
      server_.Close();
      io_.stop();
      co_return;
    }
    server_.SetSweeps(&sweeps_);
    server_.Start();
    if (web_ != nullptr) web_->Start();
    membership_.Start();
    log_.Info("dtraind ready: socket " + options_.config.socket +
              (options_.config.listen.empty()
                   ? ""
                   : ", listening on " + options_.config.listen + " (peers reach it at " +
                         data_host_ + ")") +
              (options_.config.peers.empty()
                   ? ""
                   : ", " + std::to_string(options_.config.peers.size()) + " peer(s)") +
              (web_ == nullptr ? "" : ", dashboard " + web_->Url()) + ", store " +
              options_.config.state_dir + "/dtrain.db, " + std::to_string(jobs_.running()) +
              " running, " + std::to_string(jobs_.queued()) + " queued");
    ::sd_notify(0, "READY=1");
    WaitForHangup();
    asio::co_spawn(io_, ReportStatus(), asio::detached);
    asio::co_spawn(io_, FeedWatchdog(), asio::detached);
    signals_.async_wait([this](const std::error_code& ec, int signal) {
      if (!ec) asio::co_spawn(io_, Stop(signal), asio::detached);
    });
  }

  asio::awaitable<void> Stop(int signal) {
    log_.Info(std::string("received ") + (signal == SIGTERM ? "SIGTERM" : "SIGINT") +
              ": checkpointing and stopping " + std::to_string(jobs_.running()) + " job(s)");
    ::sd_notify(0, "STOPPING=1");
    server_.Close();
    if (web_ != nullptr) web_->Close();
    co_await jobs_.Shutdown();
    Status flushed = store_->Flush();
    if (!flushed.ok()) log_.Warning("store: " + flushed.message());
    log_.Info("dtraind stopped");
    stopped_ = true;
    status_timer_.cancel();
    watchdog_timer_.cancel();
    hangup_.cancel();
    io_.stop();
  }

  void WaitForHangup() {
    hangup_.async_wait([this](const std::error_code& ec, int) {
      if (ec) return;
      Reload();
      WaitForHangup();
    });
  }

  void Reload() {
    if (options_.config_path.empty() || !std::filesystem::exists(options_.config_path)) {
      log_.Info("SIGHUP: no configuration file to re-read");
      return;
    }
    ::sd_notify(0, "RELOADING=1");
    config::DaemonConfigLoad loaded = config::LoadDaemonConfig(options_.config_path);
    if (!loaded.ok()) {
      for (const config::Diagnostic& d : loaded.diagnostics) {
        log_.Error("SIGHUP: " + config::FormatDiagnostic(d));
      }
      log_.Error("SIGHUP: keeping the previous configuration");
    } else {
      const config::DaemonConfig& c = *loaded.config;
      jobs_.Reload(Settings(c, options_.worker_exe, &membership_, DataHost(c), &log_));
      log_.set_level(LevelOf(c));
      log_.Info("SIGHUP: configuration re-read: max_jobs " + std::to_string(c.max_jobs) +
                ", cores " + std::to_string(ResolveCores(c.cores)));
    }
    ::sd_notify(0, "READY=1");
  }

  asio::awaitable<void> ReportStatus() {
    while (!stopped_) {
      const std::string status = "STATUS=" + std::to_string(jobs_.running()) + " running, " +
                                 std::to_string(jobs_.queued()) + " queued";
      ::sd_notify(0, status.c_str());
      status_timer_.expires_after(1s);
      std::error_code ec;
      co_await status_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
  }

  asio::awaitable<void> FeedWatchdog() {
    std::uint64_t usec = 0;
    if (::sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) co_return;
    while (!stopped_) {
      ::sd_notify(0, "WATCHDOG=1");
      watchdog_timer_.expires_after(std::chrono::microseconds(usec / 2));
      std::error_code ec;
      co_await watchdog_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
  }

  std::unique_ptr<WebServer> MakeWebServer() {
    const config::DaemonConfig& c = options_.config;
    if (c.http.empty()) return nullptr;
    return std::make_unique<WebServer>(io_, pool_, *store_, jobs_,
                                       WebOptions{.address = c.http,
                                                  .token = http_token_ ? &*http_token_ : nullptr,
                                                  .store_path = c.state_dir + "/dtrain.db",
                                                  .version = DTRAIND_VERSION,
                                                  .peers = static_cast<int>(c.peers.size()),
                                                  .membership = &membership_,
                                                  .node_name = NodeName(c),
                                                  .listen = c.listen,
                                                  .socket_path = c.socket,
                                                  .sweeps = &sweeps_,
                                                  .connections = caps_.http,
                                                  .streams = caps_.streams});
  }

  const DaemonOptions& options_;
  Logger log_;
  std::unique_ptr<store::Store> store_;
  const std::optional<net::ClusterKey> key_;
  const std::optional<net::ClusterKey> http_token_;
  const std::string data_host_;  // DataHost(options_.config), resolved once
  const ListenerCaps caps_;
  Membership membership_;  // its threads only read key_ and the configuration
  asio::io_context io_;
  asio::thread_pool pool_;
  Supervisor supervisor_;
  JobManager jobs_;
  SweepDriver sweeps_;
  ControlServer server_;
  std::unique_ptr<WebServer> web_;  // [daemon] http; null when off
  asio::signal_set signals_;
  asio::signal_set hangup_;
  asio::steady_timer status_timer_;
  asio::steady_timer watchdog_timer_;
  bool stopped_ = false;
  int exit_code_ = 0;
};

}  // namespace

int RunDaemon(const DaemonOptions& options) {
  Logger log(LevelOf(options.config));
  ::signal(SIGPIPE, SIG_IGN);  // a vanished peer is an error code, not a signal
  // The store, its journal and whatever else the daemon creates are its own user's alone (job
  // processes run as their submitters); the socket's mode is set explicitly (socket_mode).
  ::umask(077);
  const config::DaemonConfig& c = options.config;
  for (const auto& [dir, mode] :
       {std::pair{c.state_dir, std::filesystem::perms(0700)},
        std::pair{std::filesystem::path(c.socket).parent_path().string(),
                  std::filesystem::perms(0755)}}) {
    if (std::filesystem::exists(dir)) continue;
    Status made = MakeDirectory(dir, mode);
    if (!made.ok()) {
      log.Error(made.message());
      return 1;
    }
  }
  // A full disk must not also cost the record of what it broke: the store keeps this much in
  // state_dir/dtrain.db-reserve and gives it back to write job states, events and logs.
  constexpr std::uint64_t kStoreReserveBytes = 4u << 20;
  auto opened = store::Store::Open(c.state_dir + "/dtrain.db", {kStoreReserveBytes});
  if (!opened.ok()) {
    log.Error(c.state_dir + "/dtrain.db: " + opened.status().message());
    return 1;
  }
  std::optional<net::ClusterKey> key, http_token;
  if (!LoadKeyFile(c.key_file, "[cluster] key_file", log, &key) ||
      !LoadKeyFile(c.http_token_file, "[daemon] http_token_file", log, &http_token)) {
    return 1;
  }
  // The listeners hold at most half of the descriptors (listener_caps.h); the rest are the jobs'.
  const std::uint64_t descriptors = RaiseDescriptorLimit();
  const ListenerCaps caps = ScaledListenerCaps(descriptors);
  if (caps != kDefaultListenerCaps) {
    log.Warning("only " + std::to_string(descriptors) +
                " file descriptors (RLIMIT_NOFILE): the listeners' connection caps are scaled "
                "down to " + std::to_string(caps.unix_socket.total) + " (socket), " +
                std::to_string(caps.tcp.total) + " (TCP) and " + std::to_string(caps.http.total) +
                " (HTTP)");
  }
  Daemon daemon(options, std::move(opened).value(), std::move(key), std::move(http_token), caps);
  return daemon.Run();
}

}  // namespace dtrain::server
