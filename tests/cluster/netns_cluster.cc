#include "cluster/netns_cluster.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <thread>
#include <utility>

namespace dtrain::testing {

std::string FindProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  std::string dirs;
  if (const char* path = std::getenv("PATH")) dirs = path;
  dirs += ":/usr/local/sbin:/usr/sbin:/sbin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    if (!dir.empty()) {
      const std::string candidate = dir + "/" + name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    start = end + 1;
  }
  return "";
}

namespace {

constexpr const char* kNetnsDir = "/run/netns/";
constexpr const char* kSubnet = "10.77.0.";  // each cluster has its own namespaces: no clashes
constexpr const char* kBridge = "br0";
constexpr const char* kTbfLatency = "100ms";  // queue depth: what waits longer is dropped

// "h<host>", which names a host's folder and the bridge's end of its veth. Appended rather than
// "h" + ...: inlined in a unity batch, g++ 12 takes that insert for an overlapping copy
// (-Wrestrict).
std::string HostTag(int host) { return std::string("h").append(std::to_string(host)); }

std::string Join(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

std::string RequireProgram(const std::string& name) {
  std::string path = FindProgram(name);
  if (path.empty()) throw std::runtime_error("`" + name + "` not found (package iproute2)");
  return path;
}

// Runs `program args` in the root namespace; throws with its output unless it exits 0.
void RunChecked(const std::string& program, const std::vector<std::string>& args,
                const std::string& dir) {
  std::vector<std::string> argv = {RequireProgram(program)};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = RunProcess(argv, dir);
  if (r.exit_code != 0) {
    throw std::runtime_error(program + " " + Join(args) + " failed (exit " +
                             std::to_string(r.exit_code) + ", signal " + std::to_string(r.signal) +
                             "): " + r.err + r.out);
  }
}

// The processes (not threads of this one) inside the namespace mounted at /run/netns/NAME.
std::vector<pid_t> PidsIn(const std::string& name) {
  std::vector<pid_t> pids;
  const std::uint64_t target = NetnsInode(kNetnsDir + name);
  if (target == 0) return pids;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return pids;
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || pid == ::getpid()) continue;
    if (NetnsInode("/proc/" + std::string(entry->d_name) + "/ns/net") == target) {
      pids.push_back(static_cast<pid_t>(pid));
    }
  }
  ::closedir(proc);
  return pids;
}

// SIGKILLs everything inside `name` until nothing is left (processes may fork meanwhile).
bool KillAllIn(const std::string& name, std::chrono::seconds patience) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (true) {
    const std::vector<pid_t> pids = PidsIn(name);
    if (pids.empty()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool ProcessAlive(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno != EPERM) return false;
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t paren = stat.rfind(')');
  return !(paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z');
}

// Namespaces "dtr<pid>-..." whose pid is dead: what crashed or killed runs left behind.
void RemoveLeftovers(const std::string& dir) {
  std::vector<std::string> stale;
  if (DIR* netns = ::opendir(kNetnsDir)) {
    while (const dirent* entry = ::readdir(netns)) {
      const std::string name = entry->d_name;
      if (name.rfind("dtr", 0) != 0) continue;
      char* end = nullptr;
      const long pid = std::strtol(name.c_str() + 3, &end, 10);
      if (pid <= 0 || *end != '-' || end == name.c_str() + 3) continue;
      if (!ProcessAlive(static_cast<pid_t>(pid))) stale.push_back(name);
    }
    ::closedir(netns);
  }
  for (const std::string& name : stale) {
    KillAllIn(name, std::chrono::seconds(5));
    try {
      RunChecked("ip", {"netns", "del", name}, dir);
    } catch (const std::exception& e) {
      std::cerr << "netns_cluster: cannot remove leftover namespace " << name << ": " << e.what()
                << '\n';
    }
  }
}

// Whether `pid` (our child) has exited, without reaping it.
bool Exited(pid_t pid) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    return errno == ECHILD;
  }
  return info.si_pid != 0;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::pair<bool, std::string> Probe() {
  if (::geteuid() != 0) return {false, "network namespaces need root (CI runs the tests as root)"};
  for (const char* program : {"ip", "tc"}) {
    if (FindProgram(program).empty()) {
      return {false, std::string("`") + program + "` not found (install iproute2)"};
    }
  }
  try {
    TempDir dir;
    const std::string name = "dtr" + std::to_string(::getpid()) + "-probe";
    RunChecked("ip", {"netns", "add", name}, dir.Path(""));
    RunChecked("ip", {"netns", "del", name}, dir.Path(""));
  } catch (const std::exception& e) {
    return {false, e.what()};
  }
  return {true, ""};
}

}  // namespace

bool NetnsAvailable(std::string* why) {
  static const std::pair<bool, std::string> probed = Probe();
  if (why != nullptr) *why = probed.second;
  return probed.first;
}

std::uint64_t NetnsInode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<std::uint64_t>(st.st_ino);
}

// ---------------------------------------------------------------------------------------------
// NetnsProcess

NetnsProcess::NetnsProcess(ChildProcess child, std::string out_path, std::string err_path)
    : child_(std::move(child)), out_path_(std::move(out_path)), err_path_(std::move(err_path)) {}

bool NetnsProcess::Running() const { return !waited_ && !Exited(child_.pid()); }

std::string NetnsProcess::Stdout() const { return ReadFile(out_path_); }
std::string NetnsProcess::Stderr() const { return ReadFile(err_path_); }

void NetnsProcess::Signal(int sig) const {
  // After Wait, ChildProcess's pid is -1, and kill(-1, sig) signals every process: never.
  if (!waited_ && child_.pid() > 0) child_.Signal(sig);
}

ProcessResult NetnsProcess::Wait() {
  if (waited_) throw std::logic_error("NetnsProcess waited for twice");
  waited_ = true;
  return child_.Wait();
}

ProcessResult NetnsProcess::WaitFor(std::chrono::milliseconds timeout, bool* timed_out) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool late = false;
  while (!waited_ && !Exited(child_.pid())) {
    if (std::chrono::steady_clock::now() >= deadline) {
      late = true;
      Signal(SIGKILL);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (timed_out != nullptr) *timed_out = late;
  return Wait();
}

ProcessResult NetnsProcess::Stop(std::chrono::milliseconds grace) {
  Signal(SIGTERM);
  return WaitFor(grace);
}

// ---------------------------------------------------------------------------------------------
// NetnsCluster

NetnsCluster::NetnsCluster(int hosts) : hosts_(hosts) {
  if (hosts < 1 || hosts > kMaxHosts) {
    throw std::invalid_argument("NetnsCluster: hosts must be in [1, " + std::to_string(kMaxHosts) +
                                "], not " + std::to_string(hosts));
  }
  static std::atomic<int> counter{0};
  prefix_ = "dtr" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  std::filesystem::create_directories(dir_.path() / "run");
  for (int i = 0; i < hosts_; ++i) std::filesystem::create_directories(HostDir(i));
  RemoveLeftovers(dir_.Path("run"));
  try {
    Build();
  } catch (...) {
    Teardown();
    throw;
  }
}

NetnsCluster::~NetnsCluster() { Teardown(); }

std::string NetnsCluster::Namespace(int host) const {
  return prefix_ + "-h" + std::to_string(host);
}
std::string NetnsCluster::BridgeNamespace() const { return prefix_ + "-br"; }
std::string NetnsCluster::Address(int host) const { return kSubnet + std::to_string(host + 1); }
std::string NetnsCluster::HostDir(int host) const { return dir_.Path(HostTag(host)); }
std::string NetnsCluster::PortName(int host) const { return HostTag(host); }

void NetnsCluster::Ip(const std::vector<std::string>& args) const {
  RunChecked("ip", args, dir_.Path("run"));
}

void NetnsCluster::Tc(const std::string& ns, const std::vector<std::string>& args) const {
  std::vector<std::string> all = {"-n", ns};
  all.insert(all.end(), args.begin(), args.end());
  RunChecked("tc", all, dir_.Path("run"));
}

void NetnsCluster::Build() {
  const std::string bridge_ns = BridgeNamespace();
  Ip({"netns", "add", bridge_ns});
  created_.push_back(bridge_ns);
  for (int i = 0; i < hosts_; ++i) {
    Ip({"netns", "add", Namespace(i)});
    created_.push_back(Namespace(i));
  }
  // Without STP a bridge port forwards as soon as it is up.
  Ip({"-n", bridge_ns, "link", "add", kBridge, "up", "type", "bridge"});
  for (int i = 0; i < hosts_; ++i) {
    const std::string ns = Namespace(i);
    // Both ends are born in their namespaces: nothing ever appears in the root namespace.
    Ip({"-n", bridge_ns, "link", "add", PortName(i), "up", "master", kBridge, "type", "veth",
        "peer", "name", "eth0", "netns", ns});
    Ip({"-n", ns, "addr", "add", Address(i) + "/24", "dev", "eth0"});
    Ip({"-n", ns, "link", "set", "eth0", "up"});
    Ip({"-n", ns, "link", "set", "lo", "up"});
  }
}

void NetnsCluster::Teardown() noexcept {
  // Processes first (a namespace whose name is gone lives on while a process is inside), then
  // the namespaces: the hosts' take their veth pairs along, the bridge's the bridge.
  for (const std::string& ns : created_) {
    if (!KillAllIn(ns, std::chrono::seconds(10))) {
      std::cerr << "netns_cluster: processes survive SIGKILL in " << ns << '\n';
    }
  }
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    try {
      Ip({"netns", "del", *it});
    } catch (const std::exception& e) {
      std::cerr << "netns_cluster: " << e.what() << '\n';
    }
  }
  created_.clear();
}

NetnsProcess NetnsCluster::Spawn(int host, const std::vector<std::string>& args,
                                 const std::vector<std::string>& env) const {
  if (host < 0 || host >= hosts_) throw std::out_of_range("no host " + std::to_string(host));
  if (args.empty()) throw std::invalid_argument("Spawn: empty argv");
  const std::string path = FindProgram(args[0]);
  if (path.empty()) throw std::runtime_error("Spawn: " + args[0] + " not found");

  // Everything the child needs is prepared here: between fork and exec only system calls.
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(path.c_str()));
  for (std::size_t i = 1; i < args.size(); ++i) argv.push_back(const_cast<char*>(args[i].c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const std::string& mine : env) {
      const std::size_t eq = mine.find('=');
      if (eq != std::string::npos && entry.compare(0, eq + 1, mine, 0, eq + 1) == 0) {
        replaced = true;
      }
    }
    if (!replaced) environment.push_back(entry);
  }
  environment.insert(environment.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (std::string& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);

  static std::atomic<int> counter{0};
  const std::string stem =
      dir_.Path("run") + "/h" + std::to_string(host) + "-" + std::to_string(counter++);
  const std::string out_path = stem + ".out", err_path = stem + ".err";
  Fd ns{::open((kNetnsDir + Namespace(host)).c_str(), O_RDONLY | O_CLOEXEC)};
  Fd in{::open("/dev/null", O_RDONLY | O_CLOEXEC)};
  Fd out{::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
  Fd err{::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
  int pipe_fds[2];
  if (ns.fd < 0 || in.fd < 0 || out.fd < 0 || err.fd < 0 || ::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw std::runtime_error("Spawn: cannot prepare " + args[0] + ": " + std::strerror(errno));
  }
  Fd report_read{pipe_fds[0]}, report_write{pipe_fds[1]};

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("Spawn: fork: ") + std::strerror(errno));
  if (pid == 0) {
    int failure[2] = {0, 0};  // {step, errno}
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    if (::setns(ns.fd, CLONE_NEWNET) != 0) {
      failure[0] = 1;
    } else if (::dup2(in.fd, 0) < 0 || ::dup2(out.fd, 1) < 0 || ::dup2(err.fd, 2) < 0) {
      failure[0] = 2;
    } else {
      // Descriptors the test process left inheritable must not leak into the host.
      ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
      ::execve(argv[0], argv.data(), envp.data());
      failure[0] = 3;
    }
    failure[1] = errno;
    [[maybe_unused]] const ssize_t n = ::write(report_write.fd, failure, sizeof failure);
    ::_exit(127);
  }
  ::close(report_write.fd);
  report_write.fd = -1;
  int failure[2] = {0, 0};
  ssize_t n;
  do {
    n = ::read(report_read.fd, failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  ChildProcess child(pid, out_path, err_path);
  if (n == static_cast<ssize_t>(sizeof failure)) {
    static const char* const kSteps[] = {"", "setns", "redirect", "exec"};
    throw std::runtime_error("Spawn: " + args[0] + " in host " + std::to_string(host) + ": " +
                             kSteps[failure[0] & 3] + ": " + std::strerror(failure[1]));
  }  // (child's destructor reaps it)
  return NetnsProcess(std::move(child), out_path, err_path);
}

ProcessResult NetnsCluster::Run(int host, const std::vector<std::string>& argv,
                                std::chrono::milliseconds timeout) const {
  bool timed_out = false;
  ProcessResult r = Spawn(host, argv).WaitFor(timeout, &timed_out);
  if (timed_out) {
    r.err += "\n[netns_cluster: killed after " + std::to_string(timeout.count()) + " ms]\n";
  }
  return r;
}

NetnsDaemon NetnsCluster::StartDaemon(int host, const std::string& dtraind,
                                      const std::vector<std::string>& extra_args,
                                      std::chrono::milliseconds timeout) const {
  const std::string socket = HostDir(host) + "/dtraind.sock";
  const std::string state_dir = HostDir(host) + "/state";
  std::vector<std::string> argv = {dtraind, "--socket", socket, "--state-dir", state_dir};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  NetnsProcess process = Spawn(host, argv);

  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket.size() >= sizeof address.sun_path) {
    throw std::runtime_error("StartDaemon: socket path too long: " + socket);
  }
  std::memcpy(address.sun_path, socket.c_str(), socket.size() + 1);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (!process.Running()) {
      ProcessResult r = process.Wait();
      throw std::runtime_error("dtraind in host " + std::to_string(host) + " exited (exit " +
                               std::to_string(r.exit_code) + ", signal " +
                               std::to_string(r.signal) + "): " + r.err);
    }
    Fd probe{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    if (::connect(probe.fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
      return NetnsDaemon{std::move(process), socket, state_dir};
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ProcessResult r = process.Stop(std::chrono::seconds(2));
      throw std::runtime_error("dtraind in host " + std::to_string(host) + " did not listen on " +
                               socket + " within " + std::to_string(timeout.count()) +
                               " ms: " + r.err);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

NetnsDaemon NetnsCluster::StartPeerDaemon(int host, const std::string& dtraind,
                                          const std::string& key_file, std::uint16_t port,
                                          bool wildcard) const {
  const std::string suffix = ":" + std::to_string(port);
  std::string peers;
  for (int p = 0; p < hosts(); ++p) {
    if (p != host) peers += (peers.empty() ? "\"" : ", \"") + Address(p) + suffix + "\"";
  }
  const std::string config = HostDir(host) + "/dtraind.toml";
  std::ofstream(config) << "[cluster]\nlisten = \"" << (wildcard ? "0.0.0.0" : Address(host)) << suffix << "\"\npeers = ["
                        << peers << "]\nkey_file = \"" << key_file << "\"\nname = \"h" << host
                        << "\"\nallow_root = true\n";  // the tests run as root: so do jobs
  return StartDaemon(host, dtraind, {"--config", config});
}

void NetnsCluster::SetLinkUp(int host, bool up) const {
  Ip({"-n", BridgeNamespace(), "link", "set", PortName(host), up ? "up" : "down"});
}

void NetnsCluster::LimitBandwidth(int host, const std::string& rate,
                                  const std::string& burst) const {
  const std::vector<std::string> tbf = {"root",  "tbf", "rate",    rate,
                                        "burst", burst, "latency", kTbfLatency};
  std::vector<std::string> args = {"qdisc", "replace", "dev", "eth0"};
  args.insert(args.end(), tbf.begin(), tbf.end());
  Tc(Namespace(host), args);
  args[3] = PortName(host);
  Tc(BridgeNamespace(), args);
}

void NetnsCluster::RemoveBandwidthLimit(int host) const {
  const std::pair<std::string, std::string> ends[] = {{Namespace(host), "eth0"},
                                                      {BridgeNamespace(), PortName(host)}};
  for (const auto& [ns, dev] : ends) {
    try {
      Tc(ns, {"qdisc", "del", "dev", dev, "root"});
    } catch (const std::exception&) {
      // No limit there: nothing to remove. Anything else shows below.
    }
    const std::string tc = RequireProgram("tc");
    ProcessResult shown = RunProcess({tc, "-n", ns, "qdisc", "show", "dev", dev}, dir_.Path("run"));
    if (shown.exit_code != 0 || shown.out.find("tbf") != std::string::npos) {
      throw std::runtime_error("RemoveBandwidthLimit: " + dev + " in " + ns + ": " + shown.out +
                               shown.err);
    }
  }
}

std::vector<pid_t> NetnsCluster::Pids(int host) const { return PidsIn(Namespace(host)); }

// ---------------------------------------------------------------------------------------------
// NetnsScope

NetnsScope::NetnsScope(const NetnsCluster& cluster, int host) {
  saved_ = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  Fd target{::open((kNetnsDir + cluster.Namespace(host)).c_str(), O_RDONLY | O_CLOEXEC)};
  if (saved_ < 0 || target.fd < 0 || ::setns(target.fd, CLONE_NEWNET) != 0) {
    const int error = errno;
    if (saved_ >= 0) ::close(saved_);
    throw std::runtime_error("NetnsScope: cannot enter " + cluster.Namespace(host) + ": " +
                             std::strerror(error));
  }
}

NetnsScope::~NetnsScope() {
  if (::setns(saved_, CLONE_NEWNET) != 0) {
    // A thread left in a test host would silently run everything after it there.
    std::cerr << "NetnsScope: cannot return to the thread's namespace: " << std::strerror(errno)
              << '\n';
    std::abort();
  }
  ::close(saved_);
}

}  // namespace dtrain::testing
