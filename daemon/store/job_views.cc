#include "daemon/store/job_views.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "core/train/metrics.h"
#include "daemon/store/metric_value.h"

namespace dtrain::store {

using nlohmann::json;

namespace {

// The metrics a run records for its JOB object's progress fields rather than for `metrics`.
bool IsProgressMetric(std::string_view name) {
  return name == train::kPlannedSteps || name == train::kEpochRows || name == train::kRowsPerEpoch;
}

}  // namespace

json EventJson(const EventRecord& e) {
  return {{"time", e.time},
          {"from", e.from ? json(JobStateName(*e.from)) : json(nullptr)},
          {"to", JobStateName(e.to)},
          {"reason", e.reason}};
}

json WorkerJson(const WorkerRecord& w) {
  return {{"rank", w.rank},
          {"role", w.role},
          {"host", w.host},
          {"pid", w.pid},
          {"state", WorkerStateName(w.state)},
          {"exit_status", w.exit_status ? json(*w.exit_status) : json(nullptr)},
          {"signal", w.signal ? json(*w.signal) : json(nullptr)},
          {"started", w.started},
          {"ended", w.ended ? json(*w.ended) : json(nullptr)}};
}

json MetricJson(const MetricRow& m) {
  return {{"step", m.step},  {"epoch", m.epoch},
          {"worker", m.worker}, {"name", m.name},
          {"value", MetricValueJson(m.value)}, {"time", m.time}};
}

json LogLineJson(const LogRow& l) {
  return {{"id", l.id}, {"worker", l.worker}, {"stream", l.stream}, {"time", l.time},
          {"line", l.line}};
}

json PaceJson(const std::vector<MetricRow>& latest, std::int64_t step, JobState state) {
  const MetricRow* planned = nullptr;
  const MetricRow* furthest = nullptr;
  for (const MetricRow& m : latest) {
    if (m.name == train::kPlannedSteps) {
      planned = &m;
    } else if (furthest == nullptr || m.step > furthest->step ||
               (m.step == furthest->step && m.time > furthest->time)) {
      furthest = &m;
    }
  }
  json pace = {{"total_steps", nullptr}, {"steps_per_sec", nullptr}, {"eta_seconds", nullptr}};
  if (planned == nullptr || !(planned->value > 0)) return pace;
  const auto total = static_cast<std::int64_t>(planned->value);
  pace["total_steps"] = total;
  if (furthest == nullptr || furthest->step <= planned->step || furthest->time <= planned->time) {
    return pace;
  }
  const double rate = static_cast<double>(furthest->step - planned->step) /
                      (furthest->time - planned->time);
  pace["steps_per_sec"] = rate;
  if (state == JobState::kRunning) {
    pace["eta_seconds"] = static_cast<double>(std::max<std::int64_t>(0, total - step)) / rate;
  }
  return pace;
}

json EpochJson(const std::vector<MetricRow>& latest) {
  json epoch = {{"epoch", nullptr}, {"epoch_rows", nullptr}, {"rows_per_epoch", nullptr}};
  const auto named = [&](std::string_view name) {
    const auto at = std::find_if(latest.begin(), latest.end(),
                                 [&](const MetricRow& m) { return m.name == name; });
    return at == latest.end() ? nullptr : &*at;
  };
  const MetricRow* rows = named(train::kEpochRows);
  const MetricRow* per_epoch = named(train::kRowsPerEpoch);
  if (rows == nullptr || per_epoch == nullptr) return epoch;
  // The point's fractional epochs completed: 2.4 is in epoch 2 (0-based), 2.0 ended epoch 1.
  epoch["epoch"] = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::ceil(rows->epoch)) - 1);
  epoch["epoch_rows"] = static_cast<std::int64_t>(rows->value);
  epoch["rows_per_epoch"] = static_cast<std::int64_t>(per_epoch->value);
  return epoch;
}

Result<json> StoredJobJson(Store& store, std::int64_t id, bool with_events) {
  // The events first, then the job's row: each is a query of its own, and an event that sets the
  // reason (Store::NoteReason) commits both together, so the reason shown is never older than the
  // newest event listed.
  Result<std::vector<EventRecord>> events = store.Events(id);  // the restarts of an ended job too
  if (!events.ok()) return events.status();
  Result<JobRecord> job = store.GetJob(id);
  if (!job.ok()) return job.status();
  Result<std::vector<WorkerRecord>> workers = store.Workers(id);
  if (!workers.ok()) return workers.status();
  Result<std::vector<MetricRow>> metrics = store.LatestMetrics(id);
  if (!metrics.ok()) return metrics.status();
  Result<std::vector<CheckpointInfo>> checkpoints = store.Checkpoints(id);
  if (!checkpoints.ok()) return checkpoints.status();
  Result<std::optional<BestModelInfo>> best = store.BestModel(id);
  if (!best.ok()) return best.status();
  Result<std::optional<StoredClassReport>> report = store.FinalClassReport(id);
  if (!report.ok()) return report.status();

  json latest = json::object();
  for (const MetricRow& m : metrics.value()) {
    if (!IsProgressMetric(m.name)) latest[m.name] = MetricValueJson(m.value);
  }
  const std::int64_t step = FurthestStep(metrics.value(), checkpoints.value());
  json worker_list = json::array();
  for (const WorkerRecord& w : workers.value()) worker_list.push_back(WorkerJson(w));
  const JobRecord& r = job.value();
  json out = {{"id", r.id},
              {"name", r.name},
              {"state", JobStateName(r.state)},
              {"reason", r.reason},
              {"owner", r.owner_uid},
              {"priority", r.priority},
              {"tags", r.tags},
              {"created", r.created},
              {"updated", r.updated},
              {"step", step},
              {"restarts", CountRestarts(events.value())},
              {"metrics", std::move(latest)},
              {"workers", std::move(worker_list)}};
  // The best model kept (checkpoint.keep_best, train.early_stopping): null while there is none.
  out["best_step"] = best.value() ? json(best.value()->step) : json(nullptr);
  out["best_value"] = best.value() ? MetricValueJson(best.value()->value) : json(nullptr);
  out["best_metric"] = best.value() ? json(best.value()->metric) : json(nullptr);
  // The final evaluation's per-class report (classification jobs that ended their training):
  // null while there is none.
  out["class_report"] = nullptr;
  if (report.value()) {
    out["class_report"] = json::parse(train::ClassReportJson(report.value()->report));
    out["class_report"]["step"] = report.value()->step;
  }
  out.update(PaceJson(metrics.value(), step, r.state));
  out.update(EpochJson(metrics.value()));
  if (const std::optional<SlurmGrant> grant = NewestSlurmGrant(events.value())) {
    out["slurm"] = {{"job_id", grant->job}, {"nodes", grant->nodes}};
    json grants = json::array();
    for (const SlurmGrant& g : AttemptSlurmGrants(events.value())) {
      grants.push_back({{"job_id", g.job},
                        {"nodes", g.nodes},
                        {"worker", g.worker ? json(*g.worker) : json(nullptr)}});
    }
    out["slurm_grants"] = std::move(grants);
  }
  if (with_events) {
    json event_list = json::array();
    for (const EventRecord& e : events.value()) event_list.push_back(EventJson(e));
    out["events"] = std::move(event_list);
  }
  return out;
}

json ProgressJson(const json& job) {
  json out = json::object();
  for (const char* key :
       {"state", "step", "total_steps", "steps_per_sec", "eta_seconds", "metrics"}) {
    if (job.contains(key)) out[key] = job[key];
  }
  return out;
}

void OverlayLive(json& job, int restarts, const std::string& pending_reason) {
  job["restarts"] = std::max(job["restarts"].get<int>(), restarts);
  if (job["state"] == JobStateName(JobState::kQueued) && !pending_reason.empty()) {
    job["reason"] = pending_reason;
  }
}

Result<std::vector<std::int64_t>> NewestJobIds(Store& store, std::optional<JobState> state,
                                               std::size_t limit,
                                               std::span<const std::string> tags) {
  Result<std::vector<JobRecord>> all = store.ListJobs();
  if (!all.ok()) return all.status();
  const auto tagged = [&tags](const JobRecord& job) {
    return std::all_of(tags.begin(), tags.end(), [&job](const std::string& tag) {
      return std::find(job.tags.begin(), job.tags.end(), tag) != job.tags.end();
    });
  };
  std::vector<std::int64_t> ids;
  for (auto it = all.value().rbegin(); it != all.value().rend() && ids.size() < limit; ++it) {
    if ((!state || it->state == *state) && tagged(*it)) ids.push_back(it->id);
  }
  return ids;
}

std::int64_t FurthestStep(const std::vector<MetricRow>& latest,
                          const std::vector<CheckpointInfo>& checkpoints) {
  std::int64_t step = 0;
  for (const MetricRow& m : latest) step = std::max(step, m.step);
  // A job stopped between two logged steps has its newest checkpoint further on.
  if (!checkpoints.empty()) step = std::max(step, checkpoints.back().step);
  return step;
}

std::optional<double> FinalMetric(Store& store, std::int64_t job, int lead_rank,
                                  const std::string& metric, std::int64_t up_to_step) {
  auto rows = store.Metrics(job, metric);
  if (!rows.ok()) return std::nullopt;
  return FinalMetric(rows.value(), lead_rank, up_to_step);
}

std::optional<double> FinalMetric(const std::vector<MetricRow>& rows, int lead_rank,
                                  std::int64_t up_to_step) {
  std::optional<double> lead_value, any_value;
  for (const MetricRow& row : rows) {  // by step: the last one is the newest
    if (row.step > up_to_step) break;
    any_value = row.value;
    if (row.worker == lead_rank) lead_value = row.value;
  }
  return lead_value ? lead_value : any_value;
}

}  // namespace dtrain::store
