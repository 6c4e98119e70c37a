#include "daemon/server/peer_hosting.h"

#include <unistd.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/net/auth.h"
#include "core/net/frame_stream.h"
#include "core/net/host_info.h"
#include "core/unique_fd.h"
#include "daemon/server/account.h"
#include "daemon/server/async.h"
#include "daemon/server/control_request.h"
#include "daemon/server/launch.h"
#include "daemon/server/log_quota.h"
#include "daemon/server/supervisor.h"
#include "daemon/server/worker_channel_request.h"

extern char** environ;

namespace dtrain::server {
namespace {

using json = nlohmann::json;

// A worker started here for a job coordinated by a peer, and the connection its stand-in holds
// there: events (the reply, its lines, its exit) queue in `out` for one writer; the stand-in's
// stop orders come in on the same socket.
struct HostedWorker {
  HostedWorker(Socket s, asio::io_context& io, std::uint64_t log_quota)
      : socket(std::move(s)), wake(io), lines(log_quota) {}
  Socket socket;
  std::deque<std::string> out;  // control payloads still to send
  bool exited = false;          // its exit is in `out` (or was sent)
  pid_t pid = 0;
  asio::steady_timer wake;  // cancelled when `out` grows
  LogQuota lines;           // what of its output is passed on: `out` stays bounded
  void Push(const json& event) {
    // A line need not be UTF-8: its bad bytes travel as U+FFFD.
    out.push_back(event.dump(-1, ' ', false, json::error_handler_t::replace));
    wake.cancel();
  }
  void PushLine(std::string_view stream, std::string_view line) {
    switch (lines.Admit(line.size())) {
      case LogQuota::kKeep:
        Push({{"v", 1}, {"type", "line"}, {"stream", stream}, {"line", line}});
        break;
      case LogQuota::kNote:
        Push({{"v", 1}, {"type", "line"}, {"stream", "stderr"}, {"line", lines.Note()}});
        break;
      case LogQuota::kDropped:
        break;
    }
  }
  void PushExit(ProcessExit exit) {
    if (lines.dropped_lines() > 0) {
      Push({{"v", 1}, {"type", "line"}, {"stream", "stderr"}, {"line", lines.SummaryLine()}});
    }
    exited = true;
    Push({{"v", 1}, {"type", "exit"}, {"exit_status", exit.exit_status}, {"signal", exit.signal}});
  }
};

// How a worker a peer asked for starts here (its channel still to be opened), or why it may not:
// uid 0 only with allow_root; another user than the daemon's only when it runs as the owner,
// and then only a uid with an account here, in one of that account's own groups (ResolveAccount:
// the request's uid and gid are a key holder's word, checked against this host's database).
Result<Launch> HostedLaunch(const ClusterSide& cluster, std::int64_t job, std::int64_t rank,
                            const std::string& token, uid_t uid, gid_t gid) {
  if (uid == 0 && !cluster.allow_root) {
    return Status::Error(
        "this daemon does not start workers as uid 0 for its peers (its "
        "[cluster] allow_root is false)");
  }
  Launch launch;
  if (cluster.run_as_owner) {
    Result<Account> account = ResolveAccount(uid, gid);
    if (!account.ok()) return account.status();
    launch.account = std::move(account).value();
  } else if (uid != ::geteuid()) {
    return Status::Error("this daemon runs as uid " + std::to_string(::geteuid()) +
                         " and cannot start workers as uid " + std::to_string(uid));
  }
  launch.argv = {cluster.worker_exe,
                 "worker",
                 "--job",
                 std::to_string(job),
                 "--rank",
                 std::to_string(rank),
                 "--parent",
                 std::to_string(::getpid()),
                 "--data-host",
                 cluster.data_host};
  launch.secret = json{{"token", token}}.dump();
  launch.environment = JobEnvironment(environ, launch.account ? &*launch.account : nullptr);
  return launch;
}

// A worker channel to the coordinator at `address` (blocking: run it on the pool): connected,
// authenticated with this daemon's key, and turned into a worker channel before the worker
// gets it, so the job's owner never holds a connection that acts for the key.
Result<int> OpenChannelTo(const ClusterSide& cluster, const std::string& address) {
  using namespace std::chrono_literals;
  const std::optional<net::HostPort> to = net::SplitHostPort(address);
  if (!to) return Status::Error("not HOST:PORT");
  Result<net::FrameStream> stream = net::FrameStream::ConnectTcp(to->host, to->port, 10s);
  if (!stream.ok()) return stream.status();
  stream.value().set_peer_name("the coordinator at " + address);
  if (Status auth = net::AuthenticateClient(stream.value(), *cluster.key, 10s); !auth.ok()) {
    return auth;
  }
  if (Status channel = RequestWorkerChannel(stream.value(), 10s); !channel.ok()) return channel;
  return stream.value().Release();
}

asio::awaitable<void> SendHostedEvents(Supervisor& supervisor,
                                       std::shared_ptr<HostedWorker> hosted) {
  for (;;) {
    while (!hosted->out.empty()) {
      const std::string payload = std::move(hosted->out.front());
      hosted->out.pop_front();
      if (!co_await WriteFrame(hosted->socket, net::MessageType::kControl, 0, payload)) {
        if (!hosted->exited) supervisor.Stop(hosted->pid, std::chrono::milliseconds(0));
        co_return;
      }
    }
    if (hosted->exited) {
      std::error_code ignored;
      hosted->socket.shutdown(Socket::shutdown_both, ignored);
      co_return;
    }
    std::error_code ec;
    hosted->wake.expires_at(asio::steady_timer::time_point::max());
    co_await hosted->wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

// A stand-in that goes away takes its worker with it.
asio::awaitable<void> ReadStopOrders(Supervisor& supervisor, std::shared_ptr<HostedWorker> hosted) {
  for (;;) {
    Result<net::Frame> frame = co_await ReadFrame(hosted->socket, kMaxHandshakePayload);
    if (!frame.ok()) {
      if (!hosted->exited) supervisor.Stop(hosted->pid, std::chrono::milliseconds(0));
      co_return;
    }
    const json order = json::parse(frame.value().payload, nullptr, false);
    if (order.is_object() && StringField(order, "type") == "stop" && !hosted->exited) {
      // The stand-in's coordinator escalates.
      supervisor.Stop(hosted->pid, std::chrono::hours(1));
    }
  }
}

}  // namespace

// `spawn_worker` from a peer's stand-in: opens the worker's channel to its coordinator (an
// authenticated TCP connection, turned into a worker channel), starts the worker here as the
// job's owner with that channel as its fd 3, then the connection carries its lines and exit up
// and stop orders down until it has exited. Takes the socket over.
asio::awaitable<void> HostWorker(ControlContext& ctx, Socket& socket, const json& request) {
  const auto job = IntField(request, "job");
  const auto rank = IntField(request, "rank");
  const auto token = StringField(request, "token");
  const auto coordinator = StringField(request, "coordinator");
  const auto uid = IntField(request, "uid");
  const auto gid = IntField(request, "gid");
  const auto memory_limit = IntField(request, "memory_limit").value_or(0);
  Result<Launch> launch = Status::Error(
      "spawn_worker needs job, rank, token, coordinator, uid "
      "and gid");
  if (ctx.cluster.supervisor == nullptr) {
    launch = Status::Error("this daemon does not start workers for peers");
  } else if (job && rank && token && coordinator && uid && gid) {
    launch = HostedLaunch(ctx.cluster, *job, *rank, *token, static_cast<uid_t>(*uid),
                          static_cast<gid_t>(*gid));
  }
  if (!launch.ok()) {
    const json reply_ = Error("denied", launch.status().message());
    co_await WriteJson(socket, reply_);
    co_return;
  }
  auto connect = [&ctx, address = *coordinator] { return OpenChannelTo(ctx.cluster, address); };
  Result<int> channel = co_await OffThread(ctx.pool, connect);
  if (!channel.ok()) {
    const json reply_ = Error("internal", "cannot reach the coordinator at " + *coordinator + ": " +
                                              channel.status().message());
    co_await WriteJson(socket, reply_);
    co_return;
  }
  UniqueFd channel_end(channel.value());  // closed once the worker holds its own copy
  launch.value().connection = channel_end.get();
  launch.value().address_space =
      static_cast<std::uint64_t>(std::max<std::int64_t>(memory_limit, 0));
  auto hosted = std::make_shared<HostedWorker>(std::move(socket), ctx.io, ctx.cluster.log_quota);
  Supervisor& supervisor = *ctx.cluster.supervisor;
  Result<pid_t> pid = supervisor.Spawn(
      launch.value(),
      [hosted](std::string_view stream, std::string_view line) { hosted->PushLine(stream, line); },
      [hosted](ProcessExit exit) { hosted->PushExit(exit); });
  channel_end.reset();
  if (!pid.ok()) {
    const json reply_ = Error("internal", "cannot start the worker: " + pid.status().message());
    co_await WriteJson(hosted->socket, reply_);
    co_return;
  }
  hosted->pid = pid.value();
  json started = Ok();
  started["pid"] = pid.value();
  started["node"] = ctx.cluster.node_name;
  hosted->out.push_front(started.dump());  // before any line: no handler has run yet
  asio::co_spawn(ctx.io, SendHostedEvents(supervisor, hosted), asio::detached);
  asio::co_spawn(ctx.io, ReadStopOrders(supervisor, hosted), asio::detached);
}

}  // namespace dtrain::server
