#include "daemon/server/dashboard_stream.h"

#include <algorithm>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <cmath>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "daemon/server/async.h"
#include "daemon/server/dashboard_views.h"
#include "daemon/server/nodes_view.h"
#include "daemon/server/prometheus_text.h"
#include "daemon/server/sweep_views.h"
#include "daemon/store/job_views.h"

namespace dtrain::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxJobsListed = 200;
constexpr std::size_t kMetricsPerTick = 20000;
constexpr std::size_t kLinesPerTick = 2000;

std::string Event(const std::string& name, const json& data) {
  return "event: " + name + "\ndata: " + data.dump() + "\n\n";
}

asio::awaitable<bool> Send(asio::ip::tcp::socket& socket, const std::string& text) {
  std::error_code ec;
  co_await asio::async_write(socket, asio::buffer(text),
                             asio::redirect_error(asio::use_awaitable, ec));
  co_return !ec;
}

asio::awaitable<void> Sleep(asio::io_context& io, std::chrono::milliseconds delay) {
  asio::steady_timer timer(io);
  timer.expires_after(delay);
  std::error_code ec;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

// What one tick of a job's stream reads from the store.
struct JobTick {
  Status status;
  json job;
  std::vector<std::pair<std::int64_t, store::MetricRow>> metrics;
  std::vector<store::LogRow> logs;
};

JobTick ReadJobTick(store::Store& store, std::int64_t id, std::int64_t metrics_after,
                    std::int64_t logs_after, bool with_logs) {
  JobTick tick;
  Result<json> job = DashboardJob(store, id, with_logs);  // settings name data files, as lines may
  auto metrics = store.MetricsAfter(id, metrics_after, kMetricsPerTick);
  Result<std::vector<store::LogRow>> logs = std::vector<store::LogRow>();
  if (with_logs) logs = store.Logs(id, logs_after, kLinesPerTick);
  if (!job.ok()) {
    tick.status = job.status();
  } else if (!metrics.ok()) {
    tick.status = metrics.status();
  } else if (!logs.ok()) {
    tick.status = logs.status();
  } else {
    tick.job = std::move(job).value();
    tick.metrics = std::move(metrics).value();
    tick.logs = std::move(logs).value();
  }
  return tick;
}

json MetricsJson(const std::vector<std::pair<std::int64_t, store::MetricRow>>& rows) {
  json out = json::array();
  for (const auto& [id, m] : rows) out.push_back(store::MetricJson(m));
  return out;
}

json LinesJson(const std::vector<store::LogRow>& rows) {
  json out = json::array();
  for (const store::LogRow& l : rows) out.push_back(store::LogLineJson(l));
  return out;
}

// Runs `tick` (which returns the text to send, possibly empty, or nullopt to end) every
// `period`, sending a keep-alive comment when there was nothing to send for kKeepAlive.
template <typename Tick>
asio::awaitable<void> Pump(asio::ip::tcp::socket& socket, DashboardContext& context,
                           std::chrono::milliseconds period, Tick tick) {
  auto last_sent = Clock::now();
  for (;;) {
    std::optional<std::string> text = co_await tick();
    if (!text) co_return;
    if (text->empty() && Clock::now() - last_sent >= kKeepAlive) *text = ": keep-alive\n\n";
    if (!text->empty()) {
      if (!co_await Send(socket, *text)) co_return;
      last_sent = Clock::now();
    }
    co_await Sleep(context.io, period);
  }
}

// Each worker's sums of the SummedWorkerMetrics, added up from the rows the stream forwards
// (every row passes through it once, from the first): rank -> {"rank", name: sum...}.
class WorkerTotals {
 public:
  void Add(const std::vector<std::pair<std::int64_t, store::MetricRow>>& rows) {
    for (const auto& [id, m] : rows) {
      if (std::find(names_.begin(), names_.end(), m.name) == names_.end()) continue;
      json& t = totals_[m.worker];
      if (t.is_null()) t = {{"rank", m.worker}};
      t[m.name] = t.value(m.name, 0.0) + (std::isfinite(m.value) ? m.value : 0.0);
    }
  }
  json Json() const {
    json out = json::array();
    for (const auto& [rank, t] : totals_) out.push_back(t);
    return out;
  }

 private:
  const std::vector<std::string> names_ = SummedWorkerMetrics();
  std::map<int, json> totals_;
};

asio::awaitable<void> StreamJob(asio::ip::tcp::socket& socket, DashboardContext& context,
                                std::int64_t id) {
  std::int64_t metrics_after = 0, logs_after = 0;
  std::string last_job;
  bool told_hidden = false;
  WorkerTotals totals;
  co_await Pump(socket, context, kJobTick, [&]() -> asio::awaitable<std::optional<std::string>> {
    JobTick tick = co_await OffThread(
        context.pool, [store = &context.store, id, metrics_after, logs_after,
                       with_logs = context.show_logs] {
          return ReadJobTick(*store, id, metrics_after, logs_after, with_logs);
        });
    if (!tick.status.ok()) {
      co_return Event("error", {{"reason", tick.status.message()}});
    }
    if (const std::optional<LiveJob> live = context.jobs.Live(id)) {
      store::OverlayLive(tick.job, live->restarts, live->pending_reason);
    }
    totals.Add(tick.metrics);
    tick.job["worker_totals"] = totals.Json();
    std::string text;
    if (std::string job = tick.job.dump(); job != last_job) {
      text += "event: job\ndata: " + job + "\n\n";
      last_job = std::move(job);
    }
    if (!tick.metrics.empty()) {
      metrics_after = tick.metrics.back().first;
      text += Event("metrics", MetricsJson(tick.metrics));
    }
    if (!tick.logs.empty()) {
      logs_after = tick.logs.back().id;
      text += Event("logs", LinesJson(tick.logs));
    }
    if (!context.show_logs && !told_hidden) {
      told_hidden = true;
      text += Event("logs_hidden",
                    {{"reason", "log lines are shown only by a listener with a token ([daemon] "
                                "http_token_file); use dtrain logs " + std::to_string(id)}});
    }
    co_return text;
  });
}

asio::awaitable<void> StreamJobs(asio::ip::tcp::socket& socket, DashboardContext& context,
                                 std::optional<store::JobState> state) {
  std::string last;
  EndedJobRows ended;  // read by the pool's thread only while this coroutine waits for it
  co_await Pump(socket, context, kListTick, [&]() -> asio::awaitable<std::optional<std::string>> {
    Result<json> jobs =
        co_await OffThread(context.pool, [store = &context.store, state, cache = &ended] {
          return DashboardJobs(*store, state, kMaxJobsListed, *cache);
        });
    if (!jobs.ok()) co_return Event("error", {{"reason", jobs.status().message()}});
    for (json& j : jobs.value()) {
      const std::int64_t id = j["id"].get<std::int64_t>();
      json progress = j["state"] == "succeeded" ? json(1.0) : json(nullptr);
      if (const std::optional<LiveJob> live = context.jobs.Live(id)) {
        store::OverlayLive(j, live->restarts, live->pending_reason);
        progress = Progress(j["step"].get<std::int64_t>(), j["epoch"].get<double>(), live->epochs,
                            live->steps);
      }
      j["progress"] = std::move(progress);
    }
    std::string text = Event("jobs", jobs.value());
    if (text == last) co_return std::string();
    last = text;
    co_return text;
  });
}

asio::awaitable<void> StreamNodes(asio::ip::tcp::socket& socket, DashboardContext& context) {
  std::string last;
  co_await Pump(socket, context, kListTick, [&]() -> asio::awaitable<std::optional<std::string>> {
    std::string text = Event(
        "nodes", NodesJson(context.node_name, context.address, context.jobs, context.membership));
    if (text == last) co_return std::string();
    last = text;
    co_return text;
  });
}

// The sweep's trials as its file draws them, or null when it no longer loads (or no driver).
asio::awaitable<std::shared_ptr<const config::SweepLoadResult>> Generated(
    DashboardContext& context, const store::SweepRecord& sweep) {
  if (context.sweeps == nullptr) co_return nullptr;
  Result<std::shared_ptr<const config::SweepLoadResult>> generated =
      co_await context.sweeps->Trials(sweep);
  co_return generated.ok() ? generated.value() : nullptr;
}

// The daemon's cache of its sweeps' trial standings, or null (no driver).
TrialStandingCache* Cache(DashboardContext& context) {
  return context.sweeps != nullptr ? &context.sweeps->standing_cache() : nullptr;
}

// A SWEEP object as a listener without a token shows it: without its file's path.
void HideSource(const DashboardContext& context, json& sweep) {
  if (!context.show_logs) sweep["source"] = nullptr;
}

asio::awaitable<void> StreamSweeps(asio::ip::tcp::socket& socket, DashboardContext& context) {
  std::string last;
  std::map<std::int64_t, std::pair<double, json>> ended;  // id -> (updated, row) of ended sweeps
  co_await Pump(socket, context, kListTick, [&]() -> asio::awaitable<std::optional<std::string>> {
    auto all =
        co_await OffThread(context.pool, [store = &context.store] { return store->ListSweeps(); });
    if (!all.ok()) co_return Event("error", {{"reason", all.status().message()}});
    std::map<std::int64_t, std::pair<double, json>> kept;
    json rows = json::array();
    for (auto s = all.value().rbegin(); s != all.value().rend() && rows.size() < kMaxSweepsListed;
         ++s) {
      const bool over = s->state != store::SweepState::kRunning;
      if (const auto cached = ended.find(s->id);
          over && cached != ended.end() && cached->second.first == s->updated) {
        rows.push_back(cached->second.second);
        kept.insert(*cached);
        continue;
      }
      const std::shared_ptr<const config::SweepLoadResult> generated =
          co_await Generated(context, *s);
      Result<json> status = co_await OffThread(
          context.pool,
          [store = &context.store, sweep = &*s, trials = generated.get(), cache = Cache(context)] {
            return SweepStatusJson(*store, *sweep, trials, cache);
          });
      if (!status.ok()) co_return Event("error", {{"reason", status.status().message()}});
      json row = SweepListRow(status.value());
      HideSource(context, row);
      if (over) kept[s->id] = {s->updated, row};
      rows.push_back(std::move(row));
    }
    ended = std::move(kept);
    std::string text = Event("sweeps", rows);
    if (text == last) co_return std::string();
    last = text;
    co_return text;
  });
}

asio::awaitable<void> StreamSweep(asio::ip::tcp::socket& socket, DashboardContext& context,
                                  std::int64_t id) {
  std::string last;
  EndedSeries ended;  // read by the pool's thread only while this coroutine waits for it
  co_await Pump(socket, context, kListTick, [&]() -> asio::awaitable<std::optional<std::string>> {
    auto sweep = co_await OffThread(context.pool,
                                    [store = &context.store, id] { return store->GetSweep(id); });
    if (!sweep.ok()) co_return Event("error", {{"reason", sweep.status().message()}});
    const std::shared_ptr<const config::SweepLoadResult> generated =
        co_await Generated(context, sweep.value());
    Result<json> page = co_await OffThread(
        context.pool, [store = &context.store, record = &sweep.value(), trials = generated.get(),
                       standings = Cache(context), series = &ended] {
          return DashboardSweep(*store, *record, trials, standings, *series);
        });
    if (!page.ok()) co_return Event("error", {{"reason", page.status().message()}});
    HideSource(context, page.value()["sweep"]);
    if (!context.show_logs) page.value()["board"]["sweep"] = nullptr;
    std::string text = Event("sweep", page.value());
    if (text == last) co_return std::string();
    last = text;
    co_return text;
  });
}

// A number of at most 18 digits, as an id.
std::optional<std::int64_t> IdOf(const std::optional<std::string>& text) {
  if (!text || text->empty() || text->size() >= 19 ||
      text->find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoll(*text);
}

asio::awaitable<void> Refuse(asio::ip::tcp::socket& socket, int status, std::string body) {
  HttpResponse refused;
  refused.status = status;
  refused.body = std::move(body);
  const std::string text = FormatResponse(refused, false);  // named: GCC 12, see async.h
  co_await Send(socket, text);
}

}  // namespace

asio::awaitable<void> StreamDashboard(asio::ip::tcp::socket& socket, const HttpRequest& request,
                                      DashboardContext& context) {
  const std::optional<std::string> job = QueryValue(request.query, "job");
  const std::optional<std::string> state = QueryValue(request.query, "state");
  const std::optional<std::string> sweep = QueryValue(request.query, "sweep");
  const bool nodes = QueryValue(request.query, "nodes").has_value();
  const bool sweeps = QueryValue(request.query, "sweeps").has_value();
  const std::optional<std::int64_t> id = IdOf(job);
  const std::optional<std::int64_t> sweep_id = IdOf(sweep);
  std::optional<store::JobState> filter;
  if (state && !state->empty()) {
    Result<store::JobState> parsed = store::ParseJobState(*state);
    if (parsed.ok()) filter = parsed.value();
  }
  const bool known =
      id || nodes || sweeps || sweep_id || (!job && !sweep && (!state || state->empty() || filter));
  if (!known) {
    co_await Refuse(socket, 400,
                    "/api/stream takes job=ID, state=STATE (or none), nodes=1, sweeps=1 or "
                    "sweep=ID\n");
    co_return;
  }
  if (sweep_id) {
    auto found = co_await OffThread(
        context.pool, [store = &context.store, n = *sweep_id] { return store->GetSweep(n); });
    if (!found.ok()) {
      co_await Refuse(socket, 404, "no sweep " + std::to_string(*sweep_id) + "\n");
      co_return;
    }
  }
  const std::string head =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
      "Cache-Control: no-store\r\nConnection: close\r\nX-Content-Type-Options: nosniff\r\n\r\n";
  if (!co_await Send(socket, head)) co_return;
  if (id) {
    co_await StreamJob(socket, context, *id);
  } else if (nodes) {
    co_await StreamNodes(socket, context);
  } else if (sweeps) {
    co_await StreamSweeps(socket, context);
  } else if (sweep_id) {
    co_await StreamSweep(socket, context, *sweep_id);
  } else {
    co_await StreamJobs(socket, context, filter);
  }
}

}  // namespace dtrain::server
