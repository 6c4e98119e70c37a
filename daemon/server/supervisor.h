// Supervisor: starts worker processes (launch.h: each as its job's user, in a process group of its
// own) with stdout and stderr on pipes; delivers their output line by line; reaps them
// asynchronously (SIGCHLD); stops them with SIGTERM to the group, then SIGKILL once a grace period
// has passed.
//
//   Supervisor sup(io, 4096);   // lines cut after 4 KiB (line_cutter.h)
//   Result<pid_t> pid = sup.Spawn(Launch{.argv = {exe, "worker", ...}}, on_line, on_exit);
//   sup.Stop(pid.value(), std::chrono::seconds(10));
//
// on_exit runs once per process, after it has exited AND every line it printed was delivered, so
// a log ends with the process's last words. Pipes are read as fast as the process writes them,
// whatever the handlers do with the lines, and a line is never held whole: a line longer than
// `max_line` bytes is delivered cut (LineCutter), so a process cannot make the daemon buffer more
// than `max_line` bytes per pipe. Runs on the io_context's thread: one thread at a
// time. The io_context must run for anything to be delivered.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "daemon/server/launch.h"

namespace asio {
class io_context;
}

namespace dtrain::server {

struct ProcessExit {
  int exit_status = -1;  // when the process exited; -1 when a signal ended it
  int signal = 0;        // the signal that ended it, 0 when it exited
};

class Supervisor {
 public:
  using LineHandler = std::function<void(std::string_view stream, std::string_view line)>;
  using ExitHandler = std::function<void(ProcessExit)>;

  Supervisor(asio::io_context& io, std::size_t max_line);
  ~Supervisor();  // kills every process still running (SIGKILL to its group) and reaps it

  // Starts `launch` (StartProcess).
  Result<pid_t> Spawn(const Launch& launch, LineHandler on_line, ExitHandler on_exit);
  // SIGTERM to the process's group now; SIGKILL to it after `grace` if it has not exited.
  void Stop(pid_t pid, std::chrono::milliseconds grace);
  // SIGKILL to the process's group now: for a process whose work is thrown away (it must not
  // finish cleanly, e.g. say goodbye to the job's shards).
  void Kill(pid_t pid);
  std::size_t running() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtrain::server
