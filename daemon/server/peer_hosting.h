// A worker this daemon starts for a job a peer coordinates (daemon/control_protocol.md,
// `spawn_worker`): the peer's stand-in asks over its authenticated connection; this daemon opens
// the worker's channel to the coordinator itself (key handshake, then `worker_channel`), starts
// the worker as the job's owner with that channel as its fd 3, and passes the worker's lines and
// exit back up the stand-in's connection; the stand-in's `stop` becomes SIGTERM, and a stand-in
// that goes away takes its worker with it. The worker never holds the key.
//
//   co_await HostWorker(ctx, socket, request);   // the socket is the hosted worker's from then on
//
// Run on the daemon's I/O thread; connecting to the coordinator runs on the blocking pool.
#pragma once

#include <asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include "daemon/server/control_context.h"

namespace dtrain::server {

// Refuses (`denied`) a request this daemon may not serve: no supervisor, missing fields, uid 0
// without allow_root, a uid or gid this host does not grant (control_protocol.md). Takes the
// socket over.
asio::awaitable<void> HostWorker(ControlContext& ctx, Socket& socket,
                                 const nlohmann::json& request);

}  // namespace dtrain::server
