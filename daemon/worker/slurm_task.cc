#include "daemon/worker/slurm_task.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/unique_fd.h"
#include "daemon/worker/exit_status.h"
#include "daemon/worker/launch_secret.h"
#include "daemon/worker/stand_in.h"

namespace dtrain::worker {
namespace {

volatile sig_atomic_t g_srun = 0;

extern "C" void OnSlurmTaskStopSignal(int) {
  if (g_srun > 0) ::kill(static_cast<pid_t>(g_srun), SIGUSR1);
}

std::string OwnExecutable() {
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : std::string("dtraind");
}

// Writes all of `text` to `fd`; false when the reader went away.
bool WriteAll(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

CLI::App* AddSlurmTaskCommand(CLI::App& app, SlurmTaskArgs& args) {
  CLI::App* cmd = app.add_subcommand("slurm-task", "Internal: a job process that Slurm runs");
  cmd->group("");  // hidden
  cmd->add_option("--allocation", args.allocation)->required();
  cmd->add_option("--job", args.job)->required();
  cmd->add_option("--rank", args.rank)->required();
  cmd->add_option("--cpus", args.cpus)->required();
  cmd->add_option("--coordinator", args.coordinator)->required();
  return cmd;
}

std::vector<std::string> SrunArguments(const SlurmTaskArgs& args, const std::string& exe) {
  const std::string job = std::to_string(args.job), rank = std::to_string(args.rank);
  return {"srun",
          "--jobid=" + std::to_string(args.allocation),
          "--ntasks=1",
          "--nodes=1",
          "--cpus-per-task=" + std::to_string(args.cpus),
          "--exact",
          "--quiet",
          "--job-name=dtrain-" + job + "-rank-" + rank,
          "--",
          exe,
          "worker",
          "--job",
          job,
          "--rank",
          rank,
          "--connect",
          args.coordinator};
}

int SlurmTaskMain(const SlurmTaskArgs& args) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const std::string where = "rank " + std::to_string(args.rank) + " in Slurm job " +
                            std::to_string(args.allocation);
  Result<nlohmann::json> secret = ReadLaunchSecret();
  if (!secret.ok()) return ExitFailed("starting " + where + ": " + secret.status().message());
  const std::string forwarded =
      nlohmann::json{{"token", SecretString(secret.value(), "token").value_or("")}}.dump();
  int input[2];
  if (::pipe2(input, O_CLOEXEC) != 0) return ExitFailed("starting " + where + ": pipe failed");
  UniqueFd input_read(input[0]), input_write(input[1]);
  const std::vector<std::string> argv = SrunArguments(args, OwnExecutable());
  std::vector<char*> raw;
  for (const std::string& a : argv) raw.push_back(const_cast<char*>(a.c_str()));
  raw.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t srun = ::fork();
  if (srun < 0) return ExitFailed("starting " + where + ": fork failed");
  if (srun == 0) {
    // A group of its own, so that a SIGKILL to this stand-in's group leaves srun to cancel the
    // task on its parent-death SIGTERM.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(kExitFailed);
    ::dup2(input_read.get(), 0);
    ::execvp("srun", raw.data());
    std::fprintf(stderr, "starting %s: cannot run srun: %s\n", where.c_str(), std::strerror(errno));
    ::_exit(kExitFailed);
  }
  g_srun = srun;
  input_read.reset();  // srun's
  struct sigaction action {};
  action.sa_handler = OnSlurmTaskStopSignal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  WriteAll(input_write.get(), forwarded);  // srun gone already: its exit below says why
  input_write.reset();
  int status = 0;
  while (::waitpid(srun, &status, 0) < 0) {
    if (errno != EINTR) return ExitFailed(where + ": lost srun");
  }
  if (WIFSIGNALED(status)) return EndLike(0, WTERMSIG(status), "srun for " + where);
  const int code = WEXITSTATUS(status);
  if (code > 128 && code < 128 + 32 && code != kExitStopped) {
    return EndLike(0, code - 128, "the task of " + where);
  }
  return code;
}

}  // namespace dtrain::worker
