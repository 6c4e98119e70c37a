#include "daemon/server/request_handlers.h"

#include <unistd.h>

#include <algorithm>
#include <asio/steady_timer.hpp>
#include <optional>
#include <string>
#include <utility>

#include "core/net/frame.h"
#include "daemon/server/async.h"
#include "daemon/server/control_request.h"
#include "daemon/server/nodes_view.h"
#include "daemon/store/job_diagnosis.h"
#include "daemon/store/job_views.h"

namespace dtrain::server {
namespace {

using json = nlohmann::json;
using store::JobState;
using namespace std::chrono_literals;

// Replies built from the store on the blocking pool (plain functions, not coroutines).
json MetricsReply(store::Store& store, std::int64_t job, const std::string& name) {
  if (!store.GetJob(job).ok()) return Error("not_found", "no job " + std::to_string(job));
  auto rows = store.Metrics(job, "");
  if (!rows.ok()) return Error("internal", rows.status().message());
  json metrics = json::array();
  for (const store::MetricRow& m : rows.value()) {
    if (m.name.find(name) != std::string::npos) metrics.push_back(store::MetricJson(m));
  }
  json reply = Ok();
  reply["metrics"] = std::move(metrics);
  return reply;
}

json WhyReply(store::Store& store, std::int64_t job, std::size_t lines) {
  if (!store.GetJob(job).ok()) return Error("not_found", "no job " + std::to_string(job));
  Result<json> why = store::DiagnoseJob(store, job, lines);
  if (!why.ok()) return Error("internal", why.status().message());
  json reply = Ok();
  reply["why"] = std::move(why).value();
  return reply;
}

json SettingsReply(store::Store& store, std::int64_t job) {
  auto record = store.GetJob(job);
  if (!record.ok()) return Error("not_found", "no job " + std::to_string(job));
  json reply = Ok();
  reply["spec_toml"] = record.value().spec_toml;
  return reply;
}

json CheckpointsReply(store::Store& store, std::int64_t job) {
  if (!store.GetJob(job).ok()) return Error("not_found", "no job " + std::to_string(job));
  auto rows = store.Checkpoints(job);
  if (!rows.ok()) return Error("internal", rows.status().message());
  json list = json::array();
  for (const store::CheckpointInfo& c : rows.value()) {
    list.push_back({{"step", c.step},
                    {"time", c.time},
                    {"bytes", c.bytes},
                    {"checksum", store::FormatChecksum(c.checksum)}});
  }
  json reply = Ok();
  reply["checkpoints"] = std::move(list);
  return reply;
}

// Waits (polling the store) until the job has ended; false if it does not exist.
asio::awaitable<bool> WaitForEnd(ControlContext& ctx, std::int64_t id) {
  asio::steady_timer tick(ctx.io);
  for (;;) {
    auto job = co_await OffThread(ctx.pool, [&ctx, id] { return ctx.store.GetJob(id); });
    if (!job.ok()) co_return false;
    if (store::IsTerminal(job.value().state)) co_return true;
    tick.expires_after(100ms);
    co_await tick.async_wait(asio::use_awaitable);
  }
}

}  // namespace

asio::awaitable<bool> Version(ControlContext&, Socket& socket, const ClientRequest&) {
  json reply = Ok();
  reply["version"] = DTRAIND_VERSION;
  reply["protocol"] = net::kProtocolVersion;
  reply["pid"] = ::getpid();
  co_return co_await WriteJson(socket, reply);
}

asio::awaitable<bool> JobStatus(ControlContext& ctx, Socket& socket, const ClientRequest& request) {
  const json reply_ = co_await ctx.JobReply(request.id);
  co_return co_await WriteJson(socket, reply_);
}

asio::awaitable<bool> ListJobs(ControlContext& ctx, Socket& socket, const ClientRequest& request) {
  std::optional<JobState> state;
  if (auto name = StringField(request.body, "state")) {
    auto parsed = store::ParseJobState(*name);
    if (!parsed.ok()) {
      const json reply_ = Error("bad_request", parsed.status().message());
      co_return co_await WriteJson(socket, reply_);
    }
    state = parsed.value();
  }
  const std::optional<std::vector<std::string>> tags = StringsField(request.body, "tags");
  if (!tags) {
    const json reply_ = Error("bad_request", "\"tags\" must be a list of strings");
    co_return co_await WriteJson(socket, reply_);
  }
  const auto limit = static_cast<std::size_t>(
      std::max<std::int64_t>(0, IntField(request.body, "limit").value_or(20)));
  auto ids = co_await OffThread(ctx.pool, [&ctx, state, limit, &tags] {
    return store::NewestJobIds(ctx.store, state, limit, *tags);
  });
  if (!ids.ok()) {
    const json reply_ = Error("internal", ids.status().message());
    co_return co_await WriteJson(socket, reply_);
  }
  json list = json::array();
  for (const std::int64_t id : ids.value()) {
    Result<json> job = co_await ctx.JobObject(id, false);
    if (job.ok()) list.push_back(std::move(job).value());
  }
  json reply = Ok();
  reply["jobs"] = std::move(list);
  co_return co_await WriteJson(socket, reply);
}

asio::awaitable<bool> WaitForJob(ControlContext& ctx, Socket& socket,
                                 const ClientRequest& request) {
  if (!co_await WaitForEnd(ctx, request.id)) {
    const json reply_ = Error("not_found", "no job " + std::to_string(request.id));
    co_return co_await WriteJson(socket, reply_);
  }
  const json reply_ = co_await ctx.JobReply(request.id);
  co_return co_await WriteJson(socket, reply_);
}

asio::awaitable<bool> Metrics(ControlContext& ctx, Socket& socket, const ClientRequest& request) {
  const std::string name = StringField(request.body, "name").value_or("");
  const std::int64_t job = request.id;
  auto build = [&ctx, job, name] { return MetricsReply(ctx.store, job, name); };
  const json reply = co_await OffThread(ctx.pool, build);
  co_return co_await WriteJson(socket, reply);
}

asio::awaitable<bool> Checkpoints(ControlContext& ctx, Socket& socket,
                                  const ClientRequest& request) {
  const std::int64_t job = request.id;
  const json reply =
      co_await OffThread(ctx.pool, [&ctx, job] { return CheckpointsReply(ctx.store, job); });
  co_return co_await WriteJson(socket, reply);
}

asio::awaitable<bool> Settings(ControlContext& ctx, Socket& socket, const ClientRequest& request) {
  const std::int64_t job = request.id;
  const json reply =
      co_await OffThread(ctx.pool, [&ctx, job] { return SettingsReply(ctx.store, job); });
  co_return co_await WriteJson(socket, reply);
}

asio::awaitable<bool> Nodes(ControlContext& ctx, Socket& socket, const ClientRequest&) {
  json reply = Ok();
  reply["nodes"] =
      NodesJson(ctx.cluster.node_name, ctx.cluster.listen, ctx.jobs, ctx.cluster.membership);
  co_return co_await WriteJson(socket, reply);
}

asio::awaitable<bool> NodeHeartbeat(ControlContext& ctx, Socket& socket, const ClientRequest&) {
  json reply = Ok();
  reply["node"] =
      NodesJson(ctx.cluster.node_name, ctx.cluster.listen, ctx.jobs, nullptr)[0];  // self
  co_return co_await WriteJson(socket, reply);
}

asio::awaitable<bool> Why(ControlContext& ctx, Socket& socket, const ClientRequest& request) {
  const std::int64_t job = request.id;
  const auto lines = static_cast<std::size_t>(
      std::clamp<std::int64_t>(IntField(request.body, "lines").value_or(10), 0, 1000));
  const json reply =
      co_await OffThread(ctx.pool, [&ctx, job, lines] { return WhyReply(ctx.store, job, lines); });
  co_return co_await WriteJson(socket, reply);
}

}  // namespace dtrain::server
