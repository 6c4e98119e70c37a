// ControlServer: the daemon's Unix control socket and, when configured, its TCP listener for
// peer daemons and remote clients. Accepts clients (`dtrain`) and worker processes, reads one
// request frame at a time per connection, and answers per daemon/control_protocol.md: job
// submission and queries go to the JobManager and the store; workers introduce themselves, then
// stream metrics and checkpoints up; peer daemons send heartbeats.
//
//   ControlServer server(io, pool, store, jobs, path, 0660, {.listen = "10.0.0.1:7070", .key = &k});
//   Status s = server.Listen();   // bound and listening: READY=1 may be sent
//   server.Start();               // accepts until Close()
//
// Who may do what: a Unix-socket caller is its uid and gid (SO_PEERCRED). A TCP caller must first
// prove it holds the cluster key (core/net/auth.md) when the daemon has one, and then acts as the
// uid each request names ("uid"; 0 only with allow_root), with that user's primary group; with no
// key (loopback only) a TCP caller is nobody and may only query (status, list, metrics,
// checkpoints, nodes, version, wait). Only a job's owner, or root, may cancel it, read its logs or
// export it. A TCP connection that fails the handshake, or does not finish it within
// kHandshakeTimeout, is closed having done nothing.
//
// Worker channels: a local worker's coordinator connection is one end of a socket pair the job
// manager made (ServeWorkerChannel); a peer daemon opens one over TCP for a worker it starts
// (`worker_channel`). Such a connection carries a worker's hello and its messages, nothing else:
// the worker runs as the job's owner and holds it. A Slurm task opens its own over TCP without
// the key (`worker_channel` as its first frame): its hello, due within kHandshakeTimeout, is
// admitted only for a process of a job placed by Slurm, with that process's token.
//
// Connections are capped per listener and per client (listener_caps.h): one over a cap is
// answered with one `busy` error frame and closed at once. Until a connection has proven who it
// is (a TCP handshake, a Slurm task's hello, and a key-less TCP client forever) its frames are at
// most kMaxPreAuthPayload, and all such frames being read share kPreAuthBudget bytes; a Unix-socket
// client's are at most kMaxClientPayload, its uid's being read kClientBudget together. A frame
// over a budget closes its connection.
//
// Malformed input (bad frame, non-JSON payload) closes that connection only; an unknown or
// ill-formed request gets an error reply. A request frame not complete kRequestTimeout after its
// first byte closes its connection; a worker connection silent for its job's heartbeat_timeout
// gets the worker killed (JobManager::WorkerSilent). Runs on the io_context's thread (store reads on the
// pool); one thread at a time.
//
// This file: the listeners, the key handshake, who each connection's caller is, and the dispatch
// by the request table (request_table.h). A client's request: client_requests.h and the handlers
// it names; a worker channel: worker_channel.h; a worker hosted for a peer: peer_hosting.h.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "config/daemon_config.h"
#include "core/net/auth.h"
#include "core/status.h"
#include "daemon/server/job_manager.h"
#include "daemon/server/listener_caps.h"
#include "daemon/server/membership.h"
#include "daemon/server/supervisor.h"
#include "daemon/store/store.h"

namespace dtrain::server {

class SweepDriver;

// The daemon as a member of a cluster: its TCP listener, its key, its view of its peers.
struct ClusterSide {
  std::string listen;                      // "ADDR:PORT"; empty: no TCP listener
  const net::ClusterKey* key = nullptr;    // when set, TCP callers must authenticate with it
  bool allow_root = false;                 // TCP callers may act as uid 0 (and peers start
                                           // workers of uid 0 here)
  bool run_as_owner = false;               // workers hosted for peers run as their job's owner
  const Membership* membership = nullptr;  // the peers `nodes` reports; null: none
  std::string node_name;                   // this daemon's name in `nodes` and heartbeats
  // For `spawn_worker` (a peer coordinates a job with a worker here): how to start it.
  Supervisor* supervisor = nullptr;
  std::string worker_exe;
  std::string key_file;
  std::string data_host;
  std::uint64_t log_quota = config::kDefaultLogQuota;  // bytes of lines passed on per worker
};

class ControlServer {
 public:
  static constexpr std::chrono::seconds kHandshakeTimeout{5};
  // A request frame must be complete this long after its first byte arrived (idle is allowed).
  static constexpr std::chrono::seconds kRequestTimeout{10};
  // A frame of a connection that has not proven who it is yet (a hello, a handshake, a key-less
  // query) is at most this large; such frames being read hold at most kPreAuthBudget together.
  static constexpr std::uint32_t kMaxPreAuthPayload = 64u << 10;
  static constexpr std::size_t kPreAuthBudget = 16u << 20;
  // The request frames of one uid's Unix-socket connections being read hold at most this much.
  static constexpr std::size_t kClientBudget = 64u << 20;

  // `socket_path` empty: no Unix listener (dtrain run's coordinator serves worker channels only).
  // Registers itself as `jobs`' channel sink.
  ControlServer(asio::io_context& io, asio::thread_pool& pool, store::Store& store,
                JobManager& jobs, std::string socket_path, unsigned socket_mode,
                ClusterSide cluster = {}, ListenerCaps caps = kDefaultListenerCaps);
  ~ControlServer();

  // Removes a stale socket file first; refuses if a live daemon answers there. Also binds the
  // TCP listener, if any.
  Status Listen();
  // Serves `fd`, a connected Unix socket, as a worker channel (taking it over).
  void ServeWorkerChannel(int fd);
  void Start();
  void Close();     // stops accepting and removes the socket file
  // The daemon's sweeps, which the sweep requests go to (none: they are refused). Before Start.
  void SetSweeps(SweepDriver* sweeps);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtrain::server
