// What the control server's request handlers share (control_server.h): the daemon's I/O thread,
// its blocking pool, its store and job manager, its cluster side, the connection type they
// answer on, a checked client request, and the protocol's replies. A handler runs on the I/O
// thread, one at a time; store reads go to the pool.
//
//   Result<json> job = co_await ctx.JobObject(id, true);
//   co_return co_await WriteJson(socket, Ok({{"job", job.value()}}));
//
// Include only from daemon/server .cc files (Asio is heavy).
#pragma once

#include <asio/awaitable.hpp>
#include <asio/generic/stream_protocol.hpp>
#include <asio/io_context.hpp>
#include <asio/thread_pool.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "daemon/server/control_server.h"
#include "daemon/server/job_manager.h"
#include "daemon/store/store.h"

namespace dtrain::server {

class SweepDriver;

// Unix and TCP connections alike.
using Socket = asio::generic::stream_protocol::socket;

// The largest frame of a key handshake, and of a hosted worker's stand-in's orders.
inline constexpr std::uint32_t kMaxHandshakePayload = 4096;

struct ControlContext {
  asio::io_context& io;
  asio::thread_pool& pool;
  store::Store& store;
  JobManager& jobs;
  ClusterSide cluster;
  SweepDriver* sweeps = nullptr;  // the daemon's (ControlServer::SetSweeps); none in dtrain run

  // The JOB object of control_protocol.md; an error when the store has no such job. The store's
  // view, with what only this daemon knows: restarts not yet recorded, why a queued job waits.
  asio::awaitable<Result<nlohmann::json>> JobObject(std::int64_t id, bool with_events);
  // {"job": JOB} with its events; not_found when there is no such job.
  asio::awaitable<nlohmann::json> JobReply(std::int64_t id);
};

// A client's request that passed its row's checks (request_table.h), as its handler gets it.
struct ClientRequest {
  const nlohmann::json& body;
  std::int64_t id = 0;  // its "id", when its row names a job
  Owner acting;         // the user it acts for, when its row acts for one
};

// The control protocol's replies: ok (with `body`'s fields), and an error with its code.
nlohmann::json Ok(nlohmann::json body = nlohmann::json::object());
nlohmann::json Error(const std::string& code, const std::string& message);
nlohmann::json Error(const Refusal& refusal);  // with its diagnostics, if any

// Sends `message` as one control frame; false when the connection broke.
asio::awaitable<bool> WriteJson(Socket& socket, const nlohmann::json& message);

}  // namespace dtrain::server
