#include "daemon/server/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "core/unique_fd.h"

namespace dtrain::server {
namespace {

// What the child was doing when it failed; it reports {stage, errno} on the report pipe.
enum class Stage : int { kDescriptors, kLimit, kGroups, kGid, kUid, kDirectory, kExec };

struct Failure {
  Stage stage = Stage::kExec;
  int error = 0;
};

// The largest secret: it must fit the pipe's buffer, as it is written before the child runs.
constexpr std::size_t kMaxSecret = 4096;

const char* StageName(Stage stage) {
  switch (stage) {
    case Stage::kDescriptors: return "arranging its descriptors";
    case Stage::kLimit: return "limiting its address space";
    case Stage::kGroups: return "setting its supplementary groups";
    case Stage::kGid: return "setting its group id";
    case Stage::kUid: return "setting its user id";
    case Stage::kDirectory: return "changing to /";
    case Stage::kExec: return "executing it";
  }
  return "starting it";
}

// Everything the child uses, prepared before the fork: after it only async-signal-safe calls.
struct ChildPlan {
  std::vector<char*> argv, envp;
  int secret = -1, out = -1, err = -1, connection = -1, report = -1;
  const Launch* launch = nullptr;
  unsigned max_fd = 0;  // for closing descriptors where close_range is missing
};

[[noreturn]] void ChildFails(int report, Stage stage) {
  const Failure failure{stage, errno};
  [[maybe_unused]] const ssize_t n = ::write(report, &failure, sizeof failure);
  ::_exit(127);
}

// Closes every descriptor in [first, last].
void CloseRange(unsigned first, unsigned last, unsigned max_fd) {
  if (first > last) return;
  if (::close_range(first, last, 0) == 0) return;
  for (unsigned fd = first; fd <= last && fd <= max_fd; ++fd) ::close(static_cast<int>(fd));
}

[[noreturn]] void RunChild(const ChildPlan& plan) {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);  // SIGKILL/SIGSTOP just fail
  ::setpgid(0, 0);  // a process group of its own: stopping it reaches all it starts

  // Above the standard descriptors first, so no dup2 below overwrites a source.
  const int report = ::fcntl(plan.report, F_DUPFD_CLOEXEC, 10);
  if (report < 0) ChildFails(plan.report, Stage::kDescriptors);
  const int from[4] = {plan.secret, plan.out, plan.err, plan.connection};
  int high[4] = {-1, -1, -1, -1};
  for (int i = 0; i < 4; ++i) {
    if (from[i] >= 0 && (high[i] = ::fcntl(from[i], F_DUPFD_CLOEXEC, 10)) < 0) {
      ChildFails(report, Stage::kDescriptors);
    }
  }
  for (int i = 0; i < 4; ++i) {
    if (high[i] >= 0 && ::dup2(high[i], i) != i) ChildFails(report, Stage::kDescriptors);
  }
  const unsigned first_closed = plan.connection >= 0 ? 4 : 3;
  CloseRange(first_closed, static_cast<unsigned>(report) - 1, plan.max_fd);
  CloseRange(static_cast<unsigned>(report) + 1, UINT_MAX, plan.max_fd);

  const Launch& launch = *plan.launch;
  if (launch.address_space > 0) {
    const rlimit limit{launch.address_space, launch.address_space};
    if (::setrlimit(RLIMIT_AS, &limit) != 0) ChildFails(report, Stage::kLimit);
  }
  if (launch.account) {
    const Account& a = *launch.account;
    // Raw calls: glibc's wrappers would try to change every thread of the parent's image.
    if (::syscall(SYS_setgroups, a.groups.size(), a.groups.data()) != 0) {
      ChildFails(report, Stage::kGroups);
    }
    if (::syscall(SYS_setresgid, a.gid, a.gid, a.gid) != 0) ChildFails(report, Stage::kGid);
    if (::syscall(SYS_setresuid, a.uid, a.uid, a.uid) != 0) ChildFails(report, Stage::kUid);
  }
  if (::chdir("/") != 0) ChildFails(report, Stage::kDirectory);
  ::execve(plan.argv[0], plan.argv.data(), plan.envp.data());
  ChildFails(report, Stage::kExec);
}

Status SystemError(const std::string& what) {
  return Status::Error(what + ": " + std::strerror(errno));
}

}  // namespace

Result<pid_t> StartProcess(const Launch& launch, int out, int err) {
  if (launch.argv.empty()) return Status::Error("no program to start");
  if (launch.secret.size() > kMaxSecret) return Status::Error("the secret is too large");
  ChildPlan plan;
  plan.launch = &launch;
  plan.out = out;
  plan.err = err;
  plan.connection = launch.connection;
  for (const std::string& a : launch.argv) plan.argv.push_back(const_cast<char*>(a.c_str()));
  plan.argv.push_back(nullptr);
  for (const std::string& e : launch.environment) plan.envp.push_back(const_cast<char*>(e.c_str()));
  plan.envp.push_back(nullptr);
  rlimit files{};
  plan.max_fd = ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY
                    ? static_cast<unsigned>(files.rlim_cur)
                    : 65536;

  int secret[2], report[2];
  if (::pipe2(secret, O_CLOEXEC) != 0) return SystemError("pipe");
  UniqueFd secret_read(secret[0]), secret_write(secret[1]);
  if (::pipe2(report, O_CLOEXEC) != 0) return SystemError("pipe");
  UniqueFd report_read(report[0]), report_write(report[1]);
  // The secret fits the pipe's buffer: written now, it waits there for the child.
  std::size_t written = 0;
  while (written < launch.secret.size()) {
    const ssize_t n = ::write(secret_write.get(), launch.secret.data() + written,
                              launch.secret.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += static_cast<std::size_t>(n);
  }
  secret_write.reset();
  if (written < launch.secret.size()) {  // cannot happen below kMaxSecret: never start half told
    return Status::Error("cannot hand " + launch.argv[0] + " its secret");
  }
  plan.secret = secret_read.get();
  plan.report = report_write.get();
  const pid_t pid = ::fork();
  if (pid == 0) RunChild(plan);
  const int fork_error = errno;
  secret_read.reset();  // the child's ends
  report_write.reset();
  if (pid < 0) {
    return Status::Error(std::string("fork: ") + std::strerror(fork_error));
  }
  Failure failure;
  ssize_t got;
  do {
    got = ::read(report_read.get(), &failure, sizeof failure);  // EOF: the exec succeeded
  } while (got < 0 && errno == EINTR);
  report_read.reset();
  if (got == static_cast<ssize_t>(sizeof failure)) {
    ::waitpid(pid, nullptr, 0);
    std::string who = launch.argv[0];
    if (launch.account) who += " as " + DescribeAccount(*launch.account);
    return Status::Error("cannot start " + who + ": " + StageName(failure.stage) + ": " +
                         std::strerror(failure.error));
  }
  return pid;
}

}  // namespace dtrain::server
