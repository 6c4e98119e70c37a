#include "daemon/server/request_handlers.h"

#include <algorithm>
#include <asio/steady_timer.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/net/frame.h"
#include "daemon/server/async.h"
#include "daemon/server/control_request.h"
#include "daemon/store/checkpoint.h"
#include "daemon/store/job_views.h"

namespace dtrain::server {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr std::size_t kLogChunk = 1000;  // lines per `lines` frame

// `lines` frames' payloads for `kept`, kLogChunk lines each.
std::vector<std::string> LinesPayloads(const std::vector<store::LogRow>& kept) {
  std::vector<std::string> payloads;
  for (std::size_t i = 0; i < kept.size(); i += kLogChunk) {
    json lines = json::array();
    for (std::size_t k = i; k < std::min(kept.size(), i + kLogChunk); ++k) {
      lines.push_back(store::LogLineJson(kept[k]));
    }
    json reply = Ok();
    reply["lines"] = std::move(lines);
    payloads.push_back(reply.dump());
  }
  return payloads;
}

}  // namespace

asio::awaitable<bool> StreamLogs(ControlContext& ctx, Socket& socket,
                                 const ClientRequest& request) {
  const std::int64_t id = request.id;
  std::int64_t after = IntField(request.body, "after").value_or(0);
  const auto worker = IntField(request.body, "worker");
  const auto tail = IntField(request.body, "tail");
  const double since = NumberField(request.body, "since").value_or(0.0);
  const bool follow = BoolField(request.body, "follow");
  const bool progress = follow && BoolField(request.body, "progress");
  std::string last_progress;
  bool first = true;
  asio::steady_timer tick(ctx.io);
  for (int ticks = 0;; ++ticks) {
    // Whether the job had ended is read BEFORE its lines, so the lines read after it include
    // the last ones (a job's state turns terminal only once its logs are committed).
    auto state = co_await OffThread(ctx.pool, [&ctx, id] { return ctx.store.GetJob(id); });
    if (!state.ok()) {
      const json reply_ = Error("not_found", "no job " + std::to_string(id));
      co_return co_await WriteJson(socket, reply_);
    }
    const bool ended = store::IsTerminal(state.value().state);
    for (;;) {
      auto rows = co_await OffThread(
          ctx.pool, [&ctx, id, after] { return ctx.store.Logs(id, after, 100000); });
      if (!rows.ok()) {
        const json reply_ = Error("internal", rows.status().message());
        co_return co_await WriteJson(socket, reply_);
      }
      const std::size_t read = rows.value().size();
      const std::vector<std::string> payloads = LinesPayloads(
          SelectLines(rows.value(), &after, worker, since, first ? tail : std::nullopt));
      first = false;
      for (const std::string& payload : payloads) {
        if (!co_await WriteFrame(socket, net::MessageType::kControl, 0, payload)) co_return false;
      }
      if (read < 100000) break;
    }
    if (!follow || ended) break;
    if (progress && ticks % 10 == 0) {  // once a second, when the job has moved
      Result<json> job = co_await ctx.JobObject(id, false);
      if (job.ok()) {
        json reply = Ok();
        reply["progress"] = store::ProgressJson(job.value());
        if (std::string payload = reply.dump(); payload != last_progress) {
          if (!co_await WriteFrame(socket, net::MessageType::kControl, 0, payload)) {
            co_return false;
          }
          last_progress = std::move(payload);
        }
      }
    }
    tick.expires_after(100ms);
    co_await tick.async_wait(asio::use_awaitable);
  }
  Result<json> job = co_await ctx.JobObject(id, false);
  json reply = Ok();
  reply["end"] = true;
  reply["job"] = job.ok() ? job.value() : json();
  co_return co_await WriteJson(socket, reply);
}

asio::awaitable<bool> SendCheckpoint(ControlContext& ctx, Socket& socket,
                                     const ClientRequest& request) {
  const std::int64_t id = request.id;
  const auto step = IntField(request.body, "step");
  const bool best = BoolField(request.body, "best");
  struct Found {
    std::string spec_toml;
    std::int64_t owner_uid = 0, owner_gid = -1;
    store::CheckpointData checkpoint;
  };
  Result<Found> found = co_await OffThread(ctx.pool, [&ctx, id, step, best]() -> Result<Found> {
    auto job = ctx.store.GetJob(id);
    if (!job.ok()) return Status::Error("no job " + std::to_string(id));
    Found f{job.value().spec_toml, job.value().owner_uid, job.value().owner_gid, {}};
    if (best) {
      auto kept = ctx.store.LoadBestModel(id);
      if (!kept.ok()) return kept.status();
      if (!kept.value()) return Status::Error("job " + std::to_string(id) + " has no best model");
      f.checkpoint = std::move(*kept.value());
    } else if (step) {
      auto c = ctx.store.LoadCheckpoint(id, *step);
      if (!c.ok()) return c.status();
      f.checkpoint = std::move(c).value();
    } else {
      auto latest = ctx.store.LatestCheckpoint(id);
      if (!latest.ok()) return latest.status();
      if (!latest.value().checkpoint) {
        return Status::Error("job " + std::to_string(id) + " has no checkpoint");
      }
      f.checkpoint = std::move(*latest.value().checkpoint);
    }
    return f;
  });
  if (!found.ok()) {
    const json reply_ = Error("not_found", found.status().message());
    co_return co_await WriteJson(socket, reply_);
  }
  json reply = Ok();
  reply["step"] = found.value().checkpoint.step;
  reply["spec_toml"] = found.value().spec_toml;
  // Whose rights an export reads the job's data with (dtrain export's feature scaling).
  reply["owner"] = found.value().owner_uid;
  reply["owner_gid"] = found.value().owner_gid;
  if (!co_await WriteJson(socket, reply)) {
    co_return false;
  }
  const std::string blob = store::EncodeCheckpoint(found.value().checkpoint);
  co_return co_await WriteFrame(socket, net::MessageType::kCheckpoint,
                                static_cast<std::uint64_t>(id), blob);
}

}  // namespace dtrain::server
