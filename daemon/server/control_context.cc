#include "daemon/server/control_context.h"

#include <utility>

#include "daemon/server/async.h"
#include "daemon/store/job_views.h"

namespace dtrain::server {

using json = nlohmann::json;

asio::awaitable<Result<json>> ControlContext::JobObject(std::int64_t id, bool with_events) {
  Result<json> out = co_await OffThread(
      pool, [this, id, with_events] { return store::StoredJobJson(store, id, with_events); });
  if (!out.ok()) co_return out;
  json& job = out.value();
  if (auto live = jobs.Live(id)) store::OverlayLive(job, live->restarts, live->pending_reason);
  co_return out;
}

asio::awaitable<json> ControlContext::JobReply(std::int64_t id) {
  Result<json> job = co_await JobObject(id, true);
  if (!job.ok()) co_return Error("not_found", "no job " + std::to_string(id));
  json reply = Ok();
  reply["job"] = std::move(job).value();
  co_return reply;
}

json Ok(json body) {
  body["v"] = 1;
  body["ok"] = true;
  return body;
}

json Error(const std::string& code, const std::string& message) {
  return {{"v", 1}, {"ok", false}, {"code", code}, {"error", message}};
}

json Error(const Refusal& r) {
  json e = Error(r.code, r.message);
  if (!r.diagnostics.empty()) {
    json diags = json::array();
    for (const config::Diagnostic& d : r.diagnostics) {
      diags.push_back({{"file", d.file},
                       {"line", d.line},
                       {"column", d.column},
                       {"key", d.key},
                       {"message", d.message}});
    }
    e["diagnostics"] = std::move(diags);
  }
  return e;
}

asio::awaitable<bool> WriteJson(Socket& socket, const json& message) {
  const std::string payload = message.dump();
  co_return co_await WriteFrame(socket, net::MessageType::kControl, 0, payload);
}

}  // namespace dtrain::server
