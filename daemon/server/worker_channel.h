// The coordinator's side of a worker channel (daemon/control_protocol.md, "Worker messages"):
// a worker's `worker_hello` admitted by the JobManager (the rendezvous), answered with the job,
// its peers and the checkpoint to resume from; then the worker's heartbeats, metrics,
// checkpoints and `worker_done` until the connection ends. A watchdog tells the JobManager when
// the connection has been silent for the job's heartbeat timeout (time this daemon spends on a
// frame does not count).
//
//   co_await ServeWorkerHello(ctx, socket, hello, caller.slurm_task, ticket);  // then close
//
// Run on the daemon's I/O thread.
#pragma once

#include <asio/awaitable.hpp>
#include <nlohmann/json.hpp>
#include <optional>

#include "daemon/server/connection_gate.h"
#include "daemon/server/control_context.h"

namespace dtrain::server {

// `slurm_task`: the channel a Slurm task opened without the key (only a process of a job placed
// by Slurm is admitted on it). Once admitted, the connection's `ticket` is exempt from its
// listener's caps. Returns when the connection is over (refused, broken, or the worker done).
asio::awaitable<void> ServeWorkerHello(ControlContext& ctx, Socket& socket,
                                       const nlohmann::json& hello, bool slurm_task,
                                       std::optional<ConnectionGate::Ticket>& ticket);

}  // namespace dtrain::server
