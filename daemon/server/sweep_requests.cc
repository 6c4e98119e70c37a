// The sweep requests (control_protocol.md, "Sweeps"): sweep_submit and sweep_cancel through the
// sweep driver; sweep_status, sweep_best and sweep_list read from the store. A sweep is its
// owner's: another user (root aside) is told there is no such sweep to see, and denied changes.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "config/job_layout.h"
#include "daemon/server/async.h"
#include "daemon/server/control_request.h"
#include "daemon/server/request_handlers.h"
#include "daemon/server/sweep_driver.h"
#include "daemon/store/job_views.h"

namespace dtrain::server {
namespace {

using json = nlohmann::json;

bool Sees(uid_t caller, const store::SweepRecord& sweep) {
  return caller == 0 || static_cast<std::int64_t>(caller) == sweep.owner_uid;
}

json SweepJson(const store::SweepRecord& s) {
  return {{"id", s.id},
          {"name", s.name},
          {"owner", s.owner_uid},
          {"source", s.source},
          {"method", s.method},
          {"metric", s.metric},
          {"goal", s.goal},
          {"trials", s.trials},
          {"max_concurrent", s.max_concurrent},
          {"state", store::SweepStateName(s.state)},
          {"reason", s.reason},
          {"created", s.created},
          {"updated", s.updated}};
}

// What a trial's row holds of its values, as the TRIAL's "parameters".
json ParametersJson(const config::Trial& trial) { return json::parse(TrialParametersJson(trial)); }

// The TRIAL objects of every trial of the sweep, by index (plain function: it reads the store).
// `generated`: the trials as the sweep file draws them (their values and lead ranks), when it
// still loads.
json TrialsJson(store::Store& store, const store::SweepRecord& sweep,
                const std::vector<store::SweepTrialRecord>& rows,
                const config::SweepLoadResult* generated) {
  json trials = json::array();
  auto row = rows.begin();
  for (std::int64_t i = 0; i < sweep.trials; ++i) {
    const config::ResolvedTrial* trial =
        generated != nullptr && i < static_cast<std::int64_t>(generated->trials.size())
            ? &generated->trials[static_cast<std::size_t>(i)]
            : nullptr;
    json t = {{"trial", i},        {"job", nullptr}, {"state", "not started"},     {"steps", 0},
              {"metric", nullptr}, {"reason", ""},   {"parameters", json::array()}};
    if (trial != nullptr) t["parameters"] = ParametersJson(trial->trial);
    while (row != rows.end() && row->trial < i) ++row;
    if (row != rows.end() && row->trial == i) {
      t["parameters"] = json::parse(row->parameters, nullptr, false);
      if (!row->job) {
        t["state"] = "removed";
      } else if (Result<json> job = store::StoredJobJson(store, *row->job, false); job.ok()) {
        t["job"] = *row->job;
        t["state"] = job.value()["state"];
        t["steps"] = job.value()["step"];
        t["reason"] = job.value()["reason"];
        const int lead = trial != nullptr ? config::LeadRank(trial->job.cluster) : 0;
        const std::optional<double> metric =
            store::FinalMetric(store, *row->job, lead, sweep.metric);
        if (metric && std::isfinite(*metric)) t["metric"] = *metric;
      }
    }
    trials.push_back(std::move(t));
  }
  return trials;
}

// The best succeeded trial of `trials` (TrialsJson's) by the sweep's metric and goal; null
// while none succeeded with a value.
json BestJson(const store::SweepRecord& sweep, const json& trials) {
  const config::SweepGoal goal =
      sweep.goal == "min" ? config::SweepGoal::kMin : config::SweepGoal::kMax;
  const json* best = nullptr;
  for (const json& t : trials) {
    if (t["state"] != "succeeded" || t["metric"].is_null()) continue;
    if (best == nullptr ||
        config::Better(goal, t["metric"].get<double>(), (*best)["metric"].get<double>())) {
      best = &t;
    }
  }
  if (best == nullptr) return nullptr;
  return {{"trial", (*best)["trial"]}, {"job", (*best)["job"]}, {"metric", (*best)["metric"]}};
}

// The sweep of the request if the caller may see it; else the error reply.
asio::awaitable<Result<store::SweepRecord>> VisibleSweep(ControlContext& ctx,
                                                         const ClientRequest& request) {
  const std::int64_t id = request.id;
  auto sweep = co_await OffThread(ctx.pool, [&ctx, id] { return ctx.store.GetSweep(id); });
  if (!sweep.ok() || !Sees(request.acting.uid, sweep.value())) {
    co_return Status::Error("no sweep " + std::to_string(id));
  }
  co_return sweep;
}

// The sweep's status reply: {"sweep": SWEEP, "trials": [TRIAL], "best": BEST or null}.
asio::awaitable<json> StatusReply(ControlContext& ctx, const store::SweepRecord& sweep) {
  Result<std::shared_ptr<const config::SweepLoadResult>> generated =
      co_await ctx.sweeps->Trials(sweep);
  const config::SweepLoadResult* trials_of = generated.ok() ? generated.value().get() : nullptr;
  const std::int64_t id = sweep.id;
  auto rows = co_await OffThread(ctx.pool, [&ctx, id] { return ctx.store.SweepTrials(id); });
  if (!rows.ok()) co_return Error("internal", rows.status().message());
  auto build = [&ctx, &sweep, &rows, trials_of] {
    return TrialsJson(ctx.store, sweep, rows.value(), trials_of);
  };
  json trials = co_await OffThread(ctx.pool, build);
  json reply = Ok();
  reply["sweep"] = SweepJson(sweep);
  reply["best"] = BestJson(sweep, trials);
  reply["trials"] = std::move(trials);
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
  if (!sweep.ok()) {
    const json reply_ = Error("not_found", sweep.status().message());
    co_return co_await WriteJson(socket, reply_);
  }
  const json reply_ = co_await StatusReply(ctx, sweep.value());
  co_return co_await WriteJson(socket, reply_);
}

asio::awaitable<bool> BestTrial(ControlContext& ctx, Socket& socket, const ClientRequest& request) {
  if (NoDriver(ctx)) co_return co_await WriteJson(socket, NoDriverReply());
  Result<store::SweepRecord> sweep = co_await VisibleSweep(ctx, request);
  if (!sweep.ok()) {
    const json reply_ = Error("not_found", sweep.status().message());
    co_return co_await WriteJson(socket, reply_);
  }
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
  if (!visible.ok()) {
    const json reply_ = Error("not_found", visible.status().message());
    co_return co_await WriteJson(socket, reply_);
  }
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
