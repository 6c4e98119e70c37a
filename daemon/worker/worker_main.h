// WorkerMain: the worker process a daemon starts for a job (`dtraind worker ...`). It connects
// to its job's coordinator — its daemon's Unix socket, or, when a peer daemon started it for a
// job coordinated elsewhere, the coordinator's TCP listener, proving the cluster key — opens its data-plane socket, introduces itself with its token and that socket's
// port, and waits until the daemon has heard from every process of the job (the rendezvous); the
// answer brings the job file, the checkpoint to resume from, and every process's address. Process
// ids below cluster.workers are replicas, which train; the others are parameter-server shards,
// which serve the replicas until they leave. Metrics and checkpoints go up the daemon connection —
// a worker never opens the store. Progress lines go to stdout, which the daemon captures into the job's log.
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
  std::string socket;       // the coordinator's Unix socket, or
  std::string coordinator;  // its TCP listener, HOST:PORT, authenticated with key_file
  std::string key_file;
  std::int64_t job = 0;
  int rank = 0;
  std::string token;
  pid_t parent = 0;  // the daemon that started it; the worker exits at once if it is not its parent
  std::string data_host = "127.0.0.1";  // where this process listens for its job's peers
};

int WorkerMain(const WorkerArgs& args);

}  // namespace dtrain::worker
