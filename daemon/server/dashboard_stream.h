// The dashboard's server-sent event stream (GET /api/stream): what daemon/web/app.js's pages
// show, pushed as it changes, read from the store on the blocking pool with the daemon's live
// state laid over it. One stream per open page; the browser reconnects by itself.
//
//   ?job=N   events "job" (dashboard_views.h DashboardJob, with the live restarts and
//            "worker_totals" [{"rank", "compute_seconds", "comm_seconds", "bytes_sent",
//            "bytes_received", "wire_bytes" (compressing jobs), "exposed_comm_seconds"}], summed
//            from the metrics rows this stream has sent), "metrics"
//            (rows appended since the last: [{"step", "epoch", "worker", "name", "value",
//            "time"}]), "logs" ([{"id", "worker", "stream", "time", "line"}]) or once "logs_hidden"
//            ({"reason"}) when the listener has no token; every kJobTick.
//   ?state=S jobs page: "jobs" (DashboardJobs, newest first, with "progress"), every kListTick;
//            S may be empty (every state).
//   ?nodes=1 "nodes" (nodes_view.h), every kListTick.
//   ?sweeps=1 sweeps page: "sweeps" (dashboard_views.h SweepListRow of the newest
//            kMaxSweepsListed sweeps, newest first), every kListTick.
//   ?sweep=N "sweep" (dashboard_views.h DashboardSweep: its SWEEP, its leaderboard as `dtrain
//            sweep status N --json` prints it and each trial's curve), every kListTick; a sweep
//            the store does not have is answered 404.
// Every sweep is shown to whoever may read the dashboard, as every job is (the trials are jobs);
// a sweep's file path ("source", the board's "sweep") only by a listener with a token, as a
// job's settings.
// An event is sent when its data changed; a comment every kKeepAlive finds a closed connection.
// Log lines are owner-only on the control socket; the web listener shows them only when it
// has a token (http_token_file), whose holder the daemon's administrator chose.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/thread_pool.hpp>
#include <chrono>
#include <cstddef>
#include <string>

#include "daemon/server/http_message.h"
#include "daemon/server/job_manager.h"
#include "daemon/server/membership.h"
#include "daemon/server/sweep_driver.h"
#include "daemon/store/store.h"

namespace dtrain::server {

inline constexpr std::chrono::milliseconds kJobTick{250};
inline constexpr std::chrono::milliseconds kListTick{1000};
inline constexpr std::chrono::seconds kKeepAlive{15};
inline constexpr std::size_t kMaxSweepsListed = 100;

struct DashboardContext {
  asio::io_context& io;
  asio::thread_pool& pool;
  store::Store& store;
  JobManager& jobs;
  std::string node_name;
  std::string address;                     // this daemon's [cluster] listen, for the nodes page
  const Membership* membership = nullptr;
  bool show_logs = false;                  // the listener has a token
  SweepDriver* sweeps = nullptr;           // the daemon's sweeps (their trials' values)
};

// Serves one stream on `socket` until the client goes; `request` is a GET of /api/stream. A
// query naming no known stream is answered 400.
asio::awaitable<void> StreamDashboard(asio::ip::tcp::socket& socket, const HttpRequest& request,
                                      DashboardContext& context);

}  // namespace dtrain::server
