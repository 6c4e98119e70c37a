// ProcessLauncher: how the daemon starts a job's processes, each as the job's owner (launch.h,
// account.h): a worker on this host, whose coordinator connection is one end of a socket pair
// (its fd 3; the daemon's end goes to the channel sink) and whose token comes on its standard
// input, or the local stand-in of a worker on a peer (`dtraind remote-worker`), which asks that
// peer's daemon to start it.
//
//   ProcessLauncher launcher(settings, supervisor);
//   launcher.SetChannelSink([&](int fd) { server.ServeWorkerChannel(fd); });
//   Result<pid_t> pid = launcher.Start({job, rank, node, token, owner, memory}, on_line, on_exit);
//
// Reads the manager's settings (held by reference) and keeps nothing else: a process it started
// is the Supervisor's. Lives on the io_context's thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "core/status.h"
#include "daemon/server/launch.h"
#include "daemon/server/supervisor.h"

namespace dtrain::server {

struct ManagerSettings;

// Who submitted a job: its processes run with these ids.
struct Owner {
  uid_t uid = 0;
  gid_t gid = 0;
};

// One process of a job to start.
struct ProcessToStart {
  std::int64_t job = 0;
  int rank = 0;
  std::string node;   // the peer it runs on; empty: this host
  std::string token;  // what it proves itself with to the coordinator
  Owner owner;
  std::uint64_t memory_limit = 0;  // the job's memory_limit in bytes; 0: none
};

class ProcessLauncher {
 public:
  ProcessLauncher(const ManagerSettings& settings, Supervisor& supervisor)
      : settings_(settings), supervisor_(supervisor) {}

  // Where the daemon's ends of local workers' coordinator connections go. Must be set before a
  // local worker starts.
  void SetChannelSink(std::function<void(int fd)> sink) { channel_sink_ = std::move(sink); }
  // Makes `launch` run as `owner` (when the daemon runs jobs as their owners) with the job
  // environment of that account; an error when the account is unknown.
  Status AsOwner(const Owner& owner, Launch& launch) const;
  // Starts `p` (Supervisor::Spawn's handlers): its pid, or why it could not start.
  Result<pid_t> Start(const ProcessToStart& p, Supervisor::LineHandler on_line,
                      Supervisor::ExitHandler on_exit) const;

 private:
  // `connection`: a local worker's end of its channel.
  Result<Launch> WorkerLaunch(const ProcessToStart& p, int connection) const;
  Launch RemoteWorkerLaunch(const ProcessToStart& p) const;

  const ManagerSettings& settings_;
  Supervisor& supervisor_;
  std::function<void(int fd)> channel_sink_;
};

}  // namespace dtrain::server
