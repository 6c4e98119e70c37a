#include "daemon/server/worker_channel.h"

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/net/frame.h"
#include "daemon/server/async.h"
#include "daemon/server/control_request.h"

namespace dtrain::server {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr std::uint32_t kMaxWorkerPayload = 1u << 30;  // checkpoints of large models

json PeersJson(const std::vector<PeerAddress>& peers) {
  json out = json::array();
  for (const PeerAddress& p : peers) {
    out.push_back({{"rank", p.rank},
                   {"role", p.role},
                   {"host", p.host},
                   {"port", p.port},
                   {"partition_port", p.partition_port}});
  }
  return out;
}

// When a worker's connection last showed life, for its heartbeat watchdog.
struct WorkerPulse {
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
  bool busy = false;   // this daemon is handling a frame: the worker waits for us
  bool ended = false;  // the connection is over
};

// Tells the job manager when a worker's connection has been silent for its heartbeat timeout.
asio::awaitable<void> WatchPulse(ControlContext& ctx, std::shared_ptr<WorkerPulse> pulse,
                                 std::int64_t job, int rank, std::string token,
                                 std::chrono::milliseconds timeout) {
  asio::steady_timer tick(ctx.io);
  while (!pulse->ended) {
    const auto now = std::chrono::steady_clock::now();
    if (pulse->busy) pulse->last = now;
    const auto silence = std::chrono::duration_cast<std::chrono::milliseconds>(now - pulse->last);
    if (silence >= timeout) {
      ctx.jobs.WorkerSilent(job, rank, token, silence);
      co_return;
    }
    tick.expires_after(std::min<std::chrono::milliseconds>(timeout - silence, timeout / 4 + 1ms));
    co_await tick.async_wait(asio::use_awaitable);
  }
}

// The answer to an elastic job's worker's `regroup` (`request`), once its round completed.
asio::awaitable<json> RegroupReply(ControlContext& ctx, std::int64_t job, int rank,
                                   const std::string& token, const json& request) {
  const int membership = static_cast<int>(IntField(request, "membership").value_or(-1));
  const std::int64_t completed_step = IntField(request, "completed_step").value_or(-1);
  const Result<Regrouped> regrouped =
      co_await ctx.jobs.WorkerRegroup(job, rank, token, membership, completed_step);
  if (!regrouped.ok()) co_return Error("conflict", regrouped.status().message());
  const RegroupAnswer& a = regrouped.value().answer;
  json reply = Ok();
  reply["membership"] = a.membership;
  reply["members"] = a.members;
  reply["leader"] = a.leader;
  reply["peers"] = PeersJson(regrouped.value().peers);
  co_return reply;
}

// A worker's connection after its hello: heartbeats, metrics and checkpoints up, done at the
// end. A watchdog reports the worker when nothing arrives for the job's heartbeat_timeout.
asio::awaitable<void> ServeWorker(ControlContext& ctx, Socket& socket, std::int64_t job, int rank,
                                  const std::string& token,
                                  std::chrono::milliseconds heartbeat_timeout) {
  auto pulse = std::make_shared<WorkerPulse>();
  asio::co_spawn(ctx.io, WatchPulse(ctx, pulse, job, rank, token, heartbeat_timeout),
                 asio::detached);
  struct EndPulse {
    WorkerPulse& pulse;
    ~EndPulse() { pulse.ended = true; }
  } end_pulse{*pulse};
  for (;;) {
    pulse->busy = false;
    Result<net::Frame> frame = co_await ReadFrame(socket, kMaxWorkerPayload, &pulse->last);
    if (!frame.ok()) co_return;
    pulse->busy = true;
    const net::FrameHeader& h = frame.value().header;
    json control;
    if (h.type == net::MessageType::kControl) {
      control = json::parse(frame.value().payload, nullptr, false);
      if (control.is_discarded()) co_return;
    }
    const std::string type = StringField(control, "type").value_or("");
    // Between frames of ours only, and moot for a worker asking to regroup already.
    if (const std::optional<int> epoch =
            type == "regroup" ? std::nullopt : ctx.jobs.TakeRegroupNotice(job, rank, token)) {
      const json notice = {{"v", 1}, {"type", "regroup_now"}, {"membership", *epoch}};
      if (!co_await WriteJson(socket, notice)) co_return;
    }
    if (h.type == net::MessageType::kHeartbeat) continue;
    if (h.type == net::MessageType::kMetrics) {
      const std::optional<std::vector<train::MetricPoint>> points =
          ParseMetricPoints(frame.value().payload);
      if (!points) co_return;
      ctx.jobs.WorkerMetrics(job, rank, *points);
    } else if (h.type == net::MessageType::kCheckpoint) {
      Status saved = co_await ctx.jobs.WorkerCheckpoint(job, rank, frame.value().payload);
      const json reply_ = saved.ok() ? Ok() : Error("internal", saved.message());
      if (!co_await WriteJson(socket, reply_)) {
        co_return;
      }
    } else if (h.type == net::MessageType::kBestModel) {
      Status saved = co_await ctx.jobs.WorkerBestModel(job, rank, frame.value().payload);
      const json reply_ = saved.ok() ? Ok() : Error("internal", saved.message());
      if (!co_await WriteJson(socket, reply_)) co_return;
    } else if (type == "class_report") {
      // Named first: GCC 12 destroys a temporary of a conditional twice in a co_await's
      // arguments.
      std::string rows = control.contains("confusion") ? control["confusion"].dump() : "";
      const std::int64_t step = IntField(control, "step").value_or(-1);
      Status saved = co_await ctx.jobs.WorkerClassReport(job, rank, step, std::move(rows));
      const json reply_ = saved.ok() ? Ok() : Error("invalid", saved.message());
      if (!co_await WriteJson(socket, reply_)) co_return;
    } else if (type == "regroup") {
      const json reply_ = co_await RegroupReply(ctx, job, rank, token, control);
      if (!co_await WriteJson(socket, reply_)) co_return;
    } else if (type == "worker_done") {
      ctx.jobs.WorkerDone(job, rank, StringField(control, "stop").value_or(""),
                          IntField(control, "steps").value_or(0),
                          StringField(control, "error").value_or(""),
                          StringField(control, "reason").value_or(""));
      const json reply_ = Ok();
      if (!co_await WriteJson(socket, reply_)) co_return;
    } else {
      co_return;
    }
  }
}

}  // namespace

asio::awaitable<void> ServeWorkerHello(ControlContext& ctx, Socket& socket, const json& hello,
                                       bool slurm_task,
                                       std::optional<ConnectionGate::Ticket>& ticket) {
  const std::int64_t job = IntField(hello, "job").value_or(0);
  const int rank = static_cast<int>(IntField(hello, "rank").value_or(-1));
  const std::string token = StringField(hello, "token").value_or("");
  const auto port = static_cast<std::uint16_t>(
      std::clamp<std::int64_t>(IntField(hello, "data_port").value_or(0), 0, 65535));
  const auto partition_port = static_cast<std::uint16_t>(
      std::clamp<std::int64_t>(IntField(hello, "partition_port").value_or(0), 0, 65535));
  const std::string data_host = StringField(hello, "data_host").value_or("");
  Result<Admission> admitted =
      co_await ctx.jobs.AdmitWorker(job, rank, token, data_host, port, partition_port, slurm_task);
  if (!admitted.ok()) {
    const json reply_ = Error("denied", admitted.status().message());
    co_await WriteJson(socket, reply_);
    co_return;
  }
  if (ticket) ticket->Exempt();  // a Slurm task proven by its token, or a key holder's worker
  const Admission& a = admitted.value();
  json reply = Ok();
  reply["spec_toml"] = a.spec_toml;
  reply["data_token"] = a.data_token;
  reply["resume_step"] = a.resume_step;
  if (a.joining) reply["joining"] = true;
  if (!a.members.empty()) reply["members"] = a.members;
  reply["peers"] = PeersJson(a.peers);
  if (!co_await WriteJson(socket, reply)) {
    co_return;
  }
  if (a.resume_step >= 0 &&
      !co_await WriteFrame(socket, net::MessageType::kCheckpoint, static_cast<std::uint64_t>(job),
                           a.checkpoint_blob)) {
    co_return;
  }
  co_await ServeWorker(ctx, socket, job, rank, token, a.heartbeat_timeout);
}

}  // namespace dtrain::server
