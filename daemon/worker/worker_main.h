// WorkerMain: the worker process a daemon starts for a job (`dtraind worker ...`), as the job's
// submitter. It finds its coordinator connection on fd 3 — a socket pair to its daemon, or, when
// a peer daemon started it for a job coordinated elsewhere, a TCP connection that daemon opened
// and authenticated with the cluster key for it — and its token on standard input (launch.h:
// neither the key nor the token is ever on its command line or in its environment). It opens its
// data-plane socket, introduces itself with the token and that socket's port, and waits until
// the coordinator has heard from every process of the job (the rendezvous); the answer brings
// the job file, the checkpoint to resume from, and every process's address. Process ids below
// cluster.workers are replicas, which train; the others are parameter-server shards, which serve
// the replicas until they leave. Every file the job names is opened here, with the submitter's
// rights. Metrics and checkpoints go up the coordinator connection — a worker never opens the
// store. Progress lines go to stdout, which the daemon captures into the job's log.
//
//   return WorkerMain({job, rank, parent_pid, data_host});
//
// A task Slurm started for the job (`dtraind worker --connect HOST:PORT`, its daemon's stand-in
// being `dtraind slurm-task`) has no such fd 3: it connects to its coordinator's TCP listener and
// asks for a worker channel there; its token still comes on standard input (srun forwards it),
// and its data-plane address is the one its packets to the coordinator leave from.
//
// Dies with its parent (PR_SET_PDEATHSIG). SIGTERM, SIGINT or SIGUSR1 (the one srun forwards to
// its task) stops training after a checkpoint.
// Exit status: 0 when training completed (or reached its target), 130 when stopped by a signal,
// 1 on any failure (the reason is printed on stderr).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace dtrain::worker {

struct WorkerArgs {
  std::int64_t job = 0;
  int rank = 0;
  pid_t parent = 0;  // the daemon that started it; the worker exits at once if it is not its parent
  std::string data_host = "127.0.0.1";  // where this process listens for its job's peers
  std::string connect;  // HOST:PORT of the coordinator's listener (a Slurm task); empty: fd 3
};

int WorkerMain(const WorkerArgs& args);

}  // namespace dtrain::worker
