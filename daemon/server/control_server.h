// ControlServer: the daemon's Unix control socket. Accepts clients (`dtrain`) and worker
// processes, reads one request frame at a time per connection, and answers per
// daemon/control_protocol.md: job submission and queries go to the JobManager and the store;
// workers introduce themselves, then stream metrics and checkpoints up.
//
//   ControlServer server(io, pool, store, jobs, path, 0660);
//   Status s = server.Listen();   // bound and listening: READY=1 may be sent
//   server.Start();               // accepts until Close()
//
// Malformed input (bad frame, non-JSON payload) closes that connection only; an unknown or
// ill-formed request gets an error reply. The caller's uid comes from SO_PEERCRED. Runs on the
// io_context's thread (store reads on the pool); one thread at a time.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "daemon/server/job_manager.h"
#include "daemon/store/store.h"

namespace dtrain::server {

class ControlServer {
 public:
  ControlServer(asio::io_context& io, asio::thread_pool& pool, store::Store& store,
                JobManager& jobs, std::string socket_path, unsigned socket_mode);
  ~ControlServer();

  Status Listen();  // removes a stale socket file first; refuses if a live daemon answers there
  void Start();
  void Close();     // stops accepting and removes the socket file

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtrain::server
