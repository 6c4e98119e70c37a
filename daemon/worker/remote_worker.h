// RemoteWorkerMain: the local stand-in of a worker that runs on a peer host
// (`dtraind remote-worker ...`, started by the coordinating daemon in place of `dtraind worker`).
// It reads the worker's `spawn_worker` request (its token, its owner's uid and gid, its memory
// limit, the coordinator's address) from standard input (launch.h), sends it to the peer's
// daemon over an authenticated connection — that daemon then connects the worker to the
// coordinator and starts it as the job's owner — prints the lines the worker prints (so the
// coordinator's supervisor captures them into the job's log like a local worker's), passes a
// SIGTERM on as a stop request, and ends the way the worker ended: the same exit status, or
// killed by the same signal. So the coordinator's supervisor treats it as the worker itself.
//
//   return RemoteWorkerMain({.peer = "10.0.0.2:7070", .node = "node-2", .key_file = "/etc/k",
//                            .job = 7, .rank = 1, .parent = getppid()});
//
// It runs as the daemon's user (it reads the cluster key), never as the job's. If this process
// dies (SIGKILL after the grace period, or with its daemon), the connection drops and the peer's
// daemon kills the worker: no worker outlives its stand-in. Exit status 1 when the peer cannot be
// reached or refuses, or the connection is lost.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace dtrain::worker {

struct RemoteWorkerArgs {
  std::string peer;         // the peer daemon's listener, HOST:PORT
  std::string node;         // its name, for messages
  std::string key_file;     // the cluster key
  std::int64_t job = 0;     // the worker's job and rank, for messages
  int rank = 0;
  pid_t parent = 0;         // the coordinating daemon
};

// The hidden `remote-worker` subcommand; `args` must outlive the parse.
CLI::App* AddRemoteWorkerCommand(CLI::App& app, RemoteWorkerArgs& args);

int RemoteWorkerMain(const RemoteWorkerArgs& args);

}  // namespace dtrain::worker
