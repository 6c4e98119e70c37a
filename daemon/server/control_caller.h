// Who sent a control connection's requests (control_server.h, "Who may do what"): a Unix-socket
// caller is the uid and gid SO_PEERCRED gives; a TCP caller that proved the cluster key acts for
// the uid each request names; a TCP caller without it is nobody, and may only query; a worker
// channel carries one worker's hello and messages.
//
//   Caller caller = PeerCaller(socket.native_handle());
//   Result<Owner> acting = ActingUser(request, caller, cluster.allow_root);
//
// Pure functions of the caller and the host's user database; safe for concurrent use.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "daemon/server/job_manager.h"

namespace dtrain::server {

struct Caller {
  uid_t uid = static_cast<uid_t>(-1);  // -1: nobody (owns nothing, is not root)
  gid_t gid = static_cast<gid_t>(-1);
  bool may_change = false;   // submit, cancel, send heartbeats
  bool names_uid = false;    // a key holder over TCP: each request names the uid it acts as
  bool worker_only = false;  // a worker channel: a worker's hello and its messages, nothing else
  // A worker channel a TCP client opened without the cluster key: only a Slurm task of a job
  // placed by Slurm may be admitted on it (its token is its only credential).
  bool slurm_task = false;

  static Caller WorkerChannel();
  static Caller SlurmTaskChannel();
};

// A Unix-socket caller: the uid and gid the kernel says its process had when it connected
// (nobody, allowed only queries, when it cannot tell).
Caller PeerCaller(int fd);

// The user a request acts as: the connection's, or the uid a key holder's request names (with
// that user's primary group here; uid 0 only when `allow_root`); an error says why there is none.
Result<Owner> ActingUser(const nlohmann::json& request, const Caller& caller, bool allow_root);

}  // namespace dtrain::server
