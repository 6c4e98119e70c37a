// WorkerMain: the worker process a daemon starts for a job (`dtraind worker ...`). It connects
// to its daemon, introduces itself with its token, receives the job file (and the checkpoint to
// resume from), trains, and sends metrics and checkpoints up the same connection — it never
// opens the store. Progress lines go to stdout, which the daemon captures into the job's log.
//
//   return WorkerMain({socket, job, rank, token, parent_pid});
//
// Dies with its daemon (PR_SET_PDEATHSIG). SIGTERM or SIGINT stops training after a checkpoint.
// Exit status: 0 when training completed (or reached its target), 130 when stopped by a signal,
// 1 on any failure (the reason is printed on stderr).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace dtrain::worker {

struct WorkerArgs {
  std::string socket;
  std::int64_t job = 0;
  int rank = 0;
  std::string token;
  pid_t parent = 0;  // the daemon; the worker exits at once if it is not its parent
};

int WorkerMain(const WorkerArgs& args);

}  // namespace dtrain::worker
