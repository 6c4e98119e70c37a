// NetnsCluster: several "hosts" on one machine for tests, each a Linux network namespace with
// its own loopback and one interface, eth0, joined to the others by a veth pair into a bridge
// that lives in a namespace of its own, so nothing is configured in the machine's namespace.
// Processes run inside a host (Run, Spawn, StartDaemon: one dtraind per host with its own state
// directory); threads of the test process enter one (NetnsScope); links fail on demand
// (SetLinkUp: a partition) or slow down (LimitBandwidth: tc tbf). Needs root (CI runs as root)
// and iproute2's `ip` and `tc`; tests skip when NetnsAvailable() says no.
//
//   NetnsCluster cluster(3);                          // hosts 10.77.0.1 .. 10.77.0.3, on eth0
//   NetnsDaemon d = cluster.StartDaemon(1, dtraind);  // a dtraind in host 1, on d.socket
//
// Teardown is RAII: the destructor kills every process left in the cluster's namespaces and
// deletes them (and with them the veths and the bridge), also when a test fails. Names carry a
// prefix "dtr<pid>-<n>" so concurrent runs never collide; a new cluster first removes the
// leftovers of runs whose process is dead (a crashed or killed test).
//
// One thread at a time per NetnsCluster; NetnsScope is per thread. NetnsProcess: one thread at a
// time. NetnsAvailable is safe for concurrent use.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"

namespace dtrain::testing {

// True when clusters can be built here: root, `ip` and `tc` found, `ip netns add` works.
// Otherwise false, with the reason in *why (when not null). Probed once per process.
bool NetnsAvailable(std::string* why = nullptr);

// A process started inside a host: ChildProcess (common/process.h) plus what a long-running
// process needs: whether it still runs, its output so far, and a graceful stop. Killed (SIGKILL)
// and reaped when destroyed if it still runs.
class NetnsProcess {
 public:
  NetnsProcess(ChildProcess child, std::string out_path, std::string err_path);
  NetnsProcess(NetnsProcess&&) noexcept = default;

  pid_t pid() const { return child_.pid(); }
  bool Running() const;        // false once it exited (reaped or not)
  std::string Stdout() const;  // everything it wrote so far
  std::string Stderr() const;
  void Signal(int sig) const;  // no-op once it has been waited for
  ProcessResult Wait();        // blocks until it ends; once only
  // Waits up to `timeout`; on timeout sends SIGKILL and sets timed_out. Once only.
  ProcessResult WaitFor(std::chrono::milliseconds timeout, bool* timed_out = nullptr);
  // SIGTERM, up to `grace` to exit, then SIGKILL; returns how it ended. Once only.
  ProcessResult Stop(std::chrono::milliseconds grace = std::chrono::seconds(10));

 private:
  ChildProcess child_;
  std::string out_path_, err_path_;
  bool waited_ = false;
};

// A dtraind started by NetnsCluster::StartDaemon.
struct NetnsDaemon {
  NetnsProcess process;
  std::string socket;     // its Unix control socket (reachable from every namespace: a path)
  std::string state_dir;  // its own store
};

class NetnsCluster {
 public:
  static constexpr int kMaxHosts = 200;

  // Builds `hosts` (1..kMaxHosts) hosts; throws std::runtime_error (with the failing command's
  // output) if any step fails, having removed what it had built.
  explicit NetnsCluster(int hosts);
  ~NetnsCluster();
  NetnsCluster(const NetnsCluster&) = delete;
  NetnsCluster& operator=(const NetnsCluster&) = delete;

  int hosts() const { return hosts_; }
  const std::string& prefix() const { return prefix_; }  // "dtr<pid>-<n>"
  std::string Namespace(int host) const;                 // "<prefix>-h<host>"
  std::string BridgeNamespace() const;                   // "<prefix>-br"
  std::string Address(int host) const;                   // "10.77.0.<host+1>", on eth0
  // A directory of this host's own (state, sockets), deleted with the cluster.
  std::string HostDir(int host) const;

  // Runs argv inside `host` and waits for it, capturing stdout and stderr. argv[0] is a path or
  // a name looked up in PATH (then /usr/sbin, /sbin). Past `timeout` it is killed (SIGKILL): the
  // result then has signal == SIGKILL and err ends with a line saying so.
  ProcessResult Run(int host, const std::vector<std::string>& argv,
                    std::chrono::milliseconds timeout = std::chrono::seconds(60)) const;

  // Starts argv inside `host` with stdin from /dev/null, output to files, the environment plus
  // `env` ("NAME=VALUE", replacing a variable of that name). It gets SIGKILL if the thread that
  // started it ends (PR_SET_PDEATHSIG), and it is killed when the cluster is destroyed, as is
  // anything it started. Its output files live in the cluster's directory: read them (Stdout,
  // Stderr, Wait) before the cluster is gone. Throws if it cannot be started.
  NetnsProcess Spawn(int host, const std::vector<std::string>& argv,
                     const std::vector<std::string>& env = {}) const;

  // Starts `dtraind` (a path) in `host` with --socket and --state-dir under HostDir(host) plus
  // `extra_args`, and waits until its socket accepts connections. Throws, with its stderr, if it
  // exits or does not listen within `timeout`. Start one per host (the paths are per host).
  NetnsDaemon StartDaemon(int host, const std::string& dtraind,
                          const std::vector<std::string>& extra_args = {},
                          std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
  // StartDaemon with a [cluster] configuration: named "h<host>", listening on Address(host):port
  // (or 0.0.0.0:port when `wildcard`, leaving the daemon to find the address its peers reach it
  // at), every other host's daemon (on the same port) as its peers, and `key_file` as the key.
  NetnsDaemon StartPeerDaemon(int host, const std::string& dtraind, const std::string& key_file,
                              std::uint16_t port = 7070, bool wildcard = false) const;

  // Takes the bridge's port of `host` down (a partition: the host keeps its address and routes
  // but nothing gets in or out; its connections stall, new ones time out) or up again.
  void SetLinkUp(int host, bool up) const;
  // Limits `host`'s link to `rate` (tc syntax: "80mbit", "1gbit") in each direction, with a tbf
  // qdisc on eth0 and on the bridge's port; replaces an earlier limit. The bucket (`burst`) must
  // hold at least one MTU (tbf splits larger GSO packets) and rate / HZ (about 1 MB at 1 Gbit/s),
  // or the link stays below its rate.
  void LimitBandwidth(int host, const std::string& rate,
                      const std::string& burst = "64kb") const;
  void RemoveBandwidthLimit(int host) const;

  // The processes now running inside `host` (what `ip netns pids` lists).
  std::vector<pid_t> Pids(int host) const;

 private:
  void Build();
  void Teardown() noexcept;
  void Ip(const std::vector<std::string>& args) const;  // `ip ARGS` in the root namespace; throws
  void Tc(const std::string& ns, const std::vector<std::string>& args) const;
  std::string PortName(int host) const;  // the bridge's end of host's veth: "h<host>"

  int hosts_;
  std::string prefix_;
  TempDir dir_;  // process output (dir_/run), the hosts' directories (dir_/h<i>)
  std::vector<std::string> created_;  // namespaces that exist, in creation order
};

// Moves the calling thread into a host's namespace until destroyed (then back to where it was):
// sockets the thread creates meanwhile belong to that host, and keep belonging to it afterwards.
//
//   int fd;
//   { NetnsScope in(cluster, 2); fd = ::socket(AF_INET, SOCK_STREAM, 0); }  // a socket of host 2
class NetnsScope {
 public:
  NetnsScope(const NetnsCluster& cluster, int host);
  ~NetnsScope();
  NetnsScope(const NetnsScope&) = delete;
  NetnsScope& operator=(const NetnsScope&) = delete;

 private:
  int saved_ = -1;  // the thread's namespace before
};

// `name` as an executable path: as is when it holds a '/', else the first match in PATH, then in
// /usr/local/sbin, /usr/sbin, /sbin, /usr/bin, /bin (iproute2's `ip` and `tc` live in sbin, often
// not in PATH). Empty when there is none.
std::string FindProgram(const std::string& name);

// The inode of the network namespace `path` refers to (/run/netns/NAME, /proc/PID/ns/net); 0
// when it cannot be read.
std::uint64_t NetnsInode(const std::string& path);

}  // namespace dtrain::testing
