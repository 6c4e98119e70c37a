#include "daemon/server/process_launcher.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/unique_fd.h"
#include "daemon/server/account.h"
#include "daemon/server/job_manager.h"

extern char** environ;

namespace dtrain::server {

Status ProcessLauncher::AsOwner(const Owner& owner, Launch& launch) const {
  if (settings_.run_as_owner) {
    Result<Account> account = ResolveAccount(owner.uid, owner.gid);
    if (!account.ok()) return account.status();
    launch.account = std::move(account).value();
  }
  launch.environment = JobEnvironment(environ, launch.account ? &*launch.account : nullptr);
  return Status::Ok();
}

Result<Launch> ProcessLauncher::WorkerLaunch(const ProcessToStart& p, int connection) const {
  Launch launch;
  launch.argv = {settings_.worker_exe,
                 "worker",
                 "--job",
                 std::to_string(p.job),
                 "--rank",
                 std::to_string(p.rank),
                 "--parent",
                 std::to_string(::getpid()),
                 "--data-host",
                 settings_.data_host};
  if (Status owned = AsOwner(p.owner, launch); !owned.ok()) return owned;
  launch.connection = connection;
  launch.address_space = p.memory_limit;
  launch.secret = nlohmann::json{{"token", p.token}}.dump();
  return launch;
}

Launch ProcessLauncher::RemoteWorkerLaunch(const ProcessToStart& p) const {
  // Its local stand-in, as this daemon's user, asks the peer's daemon to start it; that daemon
  // connects it back to this coordinator.
  std::string address;
  if (settings_.nodes) {
    for (const NodeCapacity& n : settings_.nodes()) {
      if (n.name == p.node) address = n.address;
    }
  }
  Launch launch;
  launch.argv = {settings_.worker_exe,
                 "remote-worker",
                 "--peer",
                 address,
                 "--node",
                 p.node,
                 "--key-file",
                 settings_.key_file,
                 "--job",
                 std::to_string(p.job),
                 "--rank",
                 std::to_string(p.rank),
                 "--parent",
                 std::to_string(::getpid())};
  launch.secret = nlohmann::json{{"job", p.job},
                                 {"rank", p.rank},
                                 {"token", p.token},
                                 {"coordinator", settings_.coordinator},
                                 {"uid", p.owner.uid},
                                 {"gid", p.owner.gid},
                                 {"memory_limit", p.memory_limit}}
                      .dump();
  launch.environment = JobEnvironment(environ, nullptr);
  return launch;
}

Result<pid_t> ProcessLauncher::Start(const ProcessToStart& p, Supervisor::LineHandler on_line,
                                     Supervisor::ExitHandler on_exit) const {
  if (!p.node.empty()) {
    return supervisor_.Spawn(RemoteWorkerLaunch(p), std::move(on_line), std::move(on_exit));
  }
  // A local worker's coordinator connection: a socket pair, its end as the worker's fd 3.
  if (!channel_sink_) return Status::Error("no worker channels are served");
  int ends[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    return Status::Error(std::string("socketpair: ") + std::strerror(errno));
  }
  UniqueFd ours(ends[0]);
  const UniqueFd workers(ends[1]);  // the child has its copy once spawned; ours closes here
  Result<Launch> launch = WorkerLaunch(p, workers.get());
  Result<pid_t> pid =
      launch.ok() ? supervisor_.Spawn(launch.value(), std::move(on_line), std::move(on_exit))
                  : Result<pid_t>(launch.status());
  if (pid.ok()) channel_sink_(ours.release());
  return pid;
}

}  // namespace dtrain::server
