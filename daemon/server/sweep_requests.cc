// The sweep requests (control_protocol.md, "Sweeps"): sweep_submit and sweep_cancel through the
// sweep driver; sweep_status, sweep_best and sweep_list read from the store. A sweep is its
// owner's: another user (root aside) is told there is no such sweep to see, and denied changes.
#include <string>
#include <utility>
#include <vector>

#include "daemon/server/async.h"
#include "daemon/server/control_request.h"
#include "daemon/server/request_handlers.h"
#include "daemon/server/sweep_driver.h"
#include "daemon/server/sweep_views.h"

namespace dtrain::server {
namespace {

using json = nlohmann::json;

bool Sees(uid_t caller, const store::SweepRecord& sweep) {
  return caller == 0 || static_cast<std::int64_t>(caller) == sweep.owner_uid;
}

// The sweep of the request if the caller may see it; else the error NoSweep replies with: one
// answer to a sweep that does not exist and to one that is another user's.
asio::awaitable<Result<store::SweepRecord>> VisibleSweep(ControlContext& ctx,
                                                         const ClientRequest& request) {
  const std::int64_t id = request.id;
  auto sweep = co_await OffThread(ctx.pool, [&ctx, id] { return ctx.store.GetSweep(id); });
  if (!sweep.ok() || !Sees(request.acting.uid, sweep.value())) {
    co_return Status::Error("no sweep " + std::to_string(id));
  }
  co_return sweep;
}

asio::awaitable<bool> NoSweep(Socket& socket, const Status& why) {
  const json reply = Error("not_found", why.message());
  co_return co_await WriteJson(socket, reply);
}

// The sweep's status reply: {"sweep": SWEEP, "trials": [TRIAL], "best": BEST or null}; an ASHA
// sweep's SWEEP has "asha": {"min_steps", "max_steps", "reduction_factor", "rungs"}.
asio::awaitable<json> StatusReply(ControlContext& ctx, const store::SweepRecord& sweep) {
  Result<std::shared_ptr<const config::SweepLoadResult>> generated =
      co_await ctx.sweeps->Trials(sweep);
  const config::SweepLoadResult* trials_of = generated.ok() ? generated.value().get() : nullptr;
  Result<json> status = co_await OffThread(ctx.pool, [&ctx, &sweep, trials_of] {
    return SweepStatusJson(ctx.store, sweep, trials_of, &ctx.sweeps->standing_cache());
  });
  if (!status.ok()) co_return Error("internal", status.status().message());
  json reply = Ok();
  reply.update(status.value());
  co_return reply;
}

bool NoDriver(const ControlContext& ctx) { return ctx.sweeps == nullptr; }

const json& NoDriverReply() {
  static const json reply = Error("bad_request", "this coordinator runs no sweeps");
  return reply;
}

}  // namespace

asio::awaitable<bool> SubmitSweep(ControlContext& ctx, Socket& socket,
                                  const ClientRequest& request) {
  if (NoDriver(ctx)) co_return co_await WriteJson(socket, NoDriverReply());
  SweepSubmission submission;
  const std::optional<std::string> sweep_toml = StringField(request.body, "sweep_toml");
  const std::optional<std::string> base_dir = StringField(request.body, "base_dir");
  if (!sweep_toml || !base_dir) {
    const json reply_ =
        Error("bad_request", "sweep_submit needs \"sweep_toml\" and \"base_dir\" (strings)");
    co_return co_await WriteJson(socket, reply_);
  }
  submission.sweep_toml = *sweep_toml;
  submission.base_dir = *base_dir;
  submission.job_toml = StringField(request.body, "job_toml").value_or("");
  submission.source = StringField(request.body, "source").value_or("sweep.toml");
  SubmittedSweep s = co_await ctx.sweeps->Submit(std::move(submission), request.acting);
  if (s.refusal) {
    const json reply_ = Error(*s.refusal);
    co_return co_await WriteJson(socket, reply_);
  }
  const std::int64_t id = s.id;
  auto sweep = co_await OffThread(ctx.pool, [&ctx, id] { return ctx.store.GetSweep(id); });
  if (!sweep.ok()) {
    const json reply_ = Error("internal", sweep.status().message());
    co_return co_await WriteJson(socket, reply_);
  }
  json reply_ = Ok();
  reply_["sweep"] = SweepJson(sweep.value());
  co_return co_await WriteJson(socket, reply_);
}

asio::awaitable<bool> SweepStatus(ControlContext& ctx, Socket& socket,
                                  const ClientRequest& request) {
  if (NoDriver(ctx)) co_return co_await WriteJson(socket, NoDriverReply());
  Result<store::SweepRecord> sweep = co_await VisibleSweep(ctx, request);
  if (!sweep.ok()) co_return co_await NoSweep(socket, sweep.status());
  const json reply_ = co_await StatusReply(ctx, sweep.value());
  co_return co_await WriteJson(socket, reply_);
}

asio::awaitable<bool> BestTrial(ControlContext& ctx, Socket& socket, const ClientRequest& request) {
  if (NoDriver(ctx)) co_return co_await WriteJson(socket, NoDriverReply());
  Result<store::SweepRecord> sweep = co_await VisibleSweep(ctx, request);
  if (!sweep.ok()) co_return co_await NoSweep(socket, sweep.status());
  json status = co_await StatusReply(ctx, sweep.value());
  json reply_ = Ok();
  if (status["ok"] != true) {
    reply_ = std::move(status);
  } else {
    reply_["sweep"] = std::move(status["sweep"]);
    reply_["best"] = std::move(status["best"]);
  }
  co_return co_await WriteJson(socket, reply_);
}

asio::awaitable<bool> CancelSweep(ControlContext& ctx, Socket& socket,
                                  const ClientRequest& request) {
  if (NoDriver(ctx)) co_return co_await WriteJson(socket, NoDriverReply());
  Result<store::SweepRecord> visible = co_await VisibleSweep(ctx, request);
  if (!visible.ok()) co_return co_await NoSweep(socket, visible.status());
  const std::optional<Refusal> refused =
      co_await ctx.sweeps->Cancel(request.id, request.acting.uid);
  if (refused) {
    const json reply_ = Error(*refused);
    co_return co_await WriteJson(socket, reply_);
  }
  const std::int64_t id = request.id;
  auto sweep = co_await OffThread(ctx.pool, [&ctx, id] { return ctx.store.GetSweep(id); });
  if (!sweep.ok()) {
    const json reply_ = Error("internal", sweep.status().message());
    co_return co_await WriteJson(socket, reply_);
  }
  const json reply_ = co_await StatusReply(ctx, sweep.value());
  co_return co_await WriteJson(socket, reply_);
}

asio::awaitable<bool> ListSweeps(ControlContext& ctx, Socket& socket,
                                 const ClientRequest& request) {
  auto sweeps = co_await OffThread(ctx.pool, [&ctx] { return ctx.store.ListSweeps(); });
  if (!sweeps.ok()) {
    const json reply_ = Error("internal", sweeps.status().message());
    co_return co_await WriteJson(socket, reply_);
  }
  json list = json::array();
  for (auto s = sweeps.value().rbegin(); s != sweeps.value().rend(); ++s) {  // newest first
    if (Sees(request.acting.uid, *s)) list.push_back(SweepJson(*s));
  }
  json reply_ = Ok();
  reply_["sweeps"] = std::move(list);
  co_return co_await WriteJson(socket, reply_);
}

}  // namespace dtrain::server
