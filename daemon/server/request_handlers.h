// The handlers of a client's requests (daemon/control_protocol.md, "Client requests"), one per
// client row of the request table (request_table.h). Each gets a request its row's checks passed
// (client_requests.h: the acting user known, "id" present when the row needs one, the caller the
// job's owner or root when the row is owner-only), sends its reply, and returns false when the
// connection broke. Grouped by file:
//   job_requests.cc     submit, cancel, resume, rm, prune: changes, through the JobManager;
//   query_requests.cc   version, status, list, wait, metrics, checkpoints, nodes, why,
//                       node_heartbeat: one reply each, read from the store and the JobManager;
//   stream_requests.cc  logs and checkpoint: more than one frame;
//   sweep_requests.cc   sweep_submit, sweep_status, sweep_cancel, sweep_best, sweep_list: a
//                       sweep is its owner's (root aside), checked there.
//
//   co_return co_await CancelJob(ctx, socket, request);
//
// Run on the daemon's I/O thread; store reads run on the blocking pool.
#pragma once

#include <asio/awaitable.hpp>

#include "daemon/server/control_context.h"

namespace dtrain::server {

// job_requests.cc
asio::awaitable<bool> SubmitJob(ControlContext& ctx, Socket& socket, const ClientRequest& request);
asio::awaitable<bool> CancelJob(ControlContext& ctx, Socket& socket, const ClientRequest& request);
asio::awaitable<bool> ResumeJob(ControlContext& ctx, Socket& socket, const ClientRequest& request);
asio::awaitable<bool> RemoveJob(ControlContext& ctx, Socket& socket, const ClientRequest& request);
asio::awaitable<bool> PruneJobs(ControlContext& ctx, Socket& socket, const ClientRequest& request);

// query_requests.cc
asio::awaitable<bool> Version(ControlContext& ctx, Socket& socket, const ClientRequest& request);
asio::awaitable<bool> JobStatus(ControlContext& ctx, Socket& socket, const ClientRequest& request);
asio::awaitable<bool> ListJobs(ControlContext& ctx, Socket& socket, const ClientRequest& request);
// Answers once the job has ended (polling the store).
asio::awaitable<bool> WaitForJob(ControlContext& ctx, Socket& socket, const ClientRequest& request);
asio::awaitable<bool> Metrics(ControlContext& ctx, Socket& socket, const ClientRequest& request);
asio::awaitable<bool> Checkpoints(ControlContext& ctx, Socket& socket,
                                  const ClientRequest& request);
asio::awaitable<bool> Nodes(ControlContext& ctx, Socket& socket, const ClientRequest& request);
asio::awaitable<bool> Why(ControlContext& ctx, Socket& socket, const ClientRequest& request);
// The job's resolved job file (`dtrain compare`); only its owner or root may send it.
asio::awaitable<bool> Settings(ControlContext& ctx, Socket& socket, const ClientRequest& request);
// A peer daemon's heartbeat: this daemon's own NODE.
asio::awaitable<bool> NodeHeartbeat(ControlContext& ctx, Socket& socket,
                                    const ClientRequest& request);

// sweep_requests.cc
asio::awaitable<bool> SubmitSweep(ControlContext& ctx, Socket& socket,
                                  const ClientRequest& request);
asio::awaitable<bool> SweepStatus(ControlContext& ctx, Socket& socket,
                                  const ClientRequest& request);
asio::awaitable<bool> CancelSweep(ControlContext& ctx, Socket& socket,
                                  const ClientRequest& request);
asio::awaitable<bool> BestTrial(ControlContext& ctx, Socket& socket, const ClientRequest& request);
asio::awaitable<bool> ListSweeps(ControlContext& ctx, Socket& socket, const ClientRequest& request);

// stream_requests.cc
// `lines` frames (with `follow`, until the job has ended), then `end`.
asio::awaitable<bool> StreamLogs(ControlContext& ctx, Socket& socket,
                                 const ClientRequest& request);
// The reply, then the checkpoint blob in a frame of its own.
asio::awaitable<bool> SendCheckpoint(ControlContext& ctx, Socket& socket,
                                     const ClientRequest& request);

}  // namespace dtrain::server
