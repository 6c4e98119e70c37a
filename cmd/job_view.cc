#include "cmd/job_view.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "cmd/exit_codes.h"
#include "cmd/human.h"
#include "cmd/json_fields.h"
#include "cmd/terminal.h"
#include "core/train/metrics.h"
#include "daemon/store/metric_value.h"
#include "cmd/text_table.h"

namespace dtrain::cli {
namespace {

// A uid as its user name on this host, else "uid N".
std::string OwnerName(const nlohmann::json& job) {
  const nlohmann::json* owner = JsonField(job, "owner");
  if (owner == nullptr) return "";
  if (owner->is_string()) return owner->get<std::string>();
  if (!owner->is_number_integer()) return "";
  const auto uid = owner->get<std::int64_t>();
  passwd entry{};
  passwd* found = nullptr;
  char buffer[1024];
  if (uid >= 0 &&
      ::getpwuid_r(static_cast<uid_t>(uid), &entry, buffer, sizeof buffer, &found) == 0 &&
      found != nullptr) {
    return found->pw_name;
  }
  return "uid " + std::to_string(uid);
}

std::optional<std::int64_t> OptionalInt(const nlohmann::json& object, const std::string& key) {
  if (!JsonOptionalNumber(object, key)) return std::nullopt;
  return JsonInt(object, key);
}

// A finite, non-negative number, else nothing.
std::optional<double> OptionalPace(const nlohmann::json& object, const std::string& key) {
  const std::optional<double> value = JsonOptionalNumber(object, key);
  if (!value || !std::isfinite(*value) || *value < 0) return std::nullopt;
  return value;
}

std::string_view StateColor(const std::string& state) {
  if (state == "succeeded") return kGreen;
  if (state == "failed") return kRed;
  if (state == "cancelled") return kYellow;
  if (state == "queued") return {};
  return kCyan;
}

// The latest metrics, those that count a window of steps (`windows`) or the others.
std::string MetricsLine(const JobInfo& job, bool windows) {
  std::string line;
  for (const auto& [name, value] : job.metrics) {
    if (train::IsWindowCounter(name) != windows) continue;
    line += (line.empty() ? "" : "  ") + name + " " + FormatMetric(name, value);
  }
  return line;
}

// The step line of `status`: "100/4690 (2%), 12.3 steps/s, ETA 6m12s".
std::string StepLine(const JobInfo& job) {
  std::string line = StepOfTotal(job);
  if (job.steps_per_sec && job.state == "running") {
    char pace[48];
    std::snprintf(pace, sizeof pace, ", %.3g steps/s", *job.steps_per_sec);
    line += pace;
  }
  if (job.eta_seconds && job.state == "running") line += ", ETA " + FormatDuration(*job.eta_seconds);
  return line;
}

// The epoch line of `status`, for a sync job: "3, 4800 of its 12000 rows (40%)" (the epoch
// counted from 1); "" where the job reports no such place.
std::string EpochLine(const JobInfo& job) {
  if (!job.epoch || !job.epoch_rows || !job.rows_per_epoch || *job.rows_per_epoch <= 0) return "";
  const double done =
      static_cast<double>(*job.epoch_rows) / static_cast<double>(*job.rows_per_epoch);
  return std::to_string(*job.epoch + 1) + ", " + std::to_string(*job.epoch_rows) + " of its " +
         std::to_string(*job.rows_per_epoch) + " rows (" +
         std::to_string(static_cast<int>(std::clamp(done, 0.0, 1.0) * 100.0)) + "%)";
}

std::string WorkerExit(const WorkerInfo& w) {
  if (w.signal && *w.signal > 0) return "signal " + std::to_string(*w.signal);
  if (w.exit_status) return "exit " + std::to_string(*w.exit_status);
  return "-";
}

std::string TimeWithAge(double time, double now) {
  if (!(time > 0)) return "-";
  return FormatLocalTime(time) + " (" + FormatAge(time, now) + ")";
}

}  // namespace

JobInfo ParseJob(const nlohmann::json& job) {
  JobInfo info;
  info.id = JsonInt(job, "id");
  info.name = Printable(JsonString(job, "name"));
  info.state = Printable(JsonString(job, "state"));
  info.reason = Printable(JsonString(job, "reason"));
  info.owner = Printable(OwnerName(job));
  info.priority = JsonInt(job, "priority");
  for (const nlohmann::json& tag : JsonArray(job, "tags")) {
    if (tag.is_string()) info.tags.push_back(Printable(tag.get<std::string>()));
  }
  info.created = JsonNumber(job, "created");
  info.updated = JsonNumber(job, "updated");
  info.step = JsonInt(job, "step");
  info.total_steps = OptionalInt(job, "total_steps");
  info.best_step = OptionalInt(job, "best_step");
  info.best_metric = Printable(JsonString(job, "best_metric"));
  info.best_value = JsonNumber(job, "best_value");
  if (info.total_steps && *info.total_steps <= 0) info.total_steps.reset();
  info.steps_per_sec = OptionalPace(job, "steps_per_sec");
  info.eta_seconds = OptionalPace(job, "eta_seconds");
  info.epoch = OptionalInt(job, "epoch");
  info.epoch_rows = OptionalInt(job, "epoch_rows");
  info.rows_per_epoch = OptionalInt(job, "rows_per_epoch");
  info.restarts = JsonInt(job, "restarts");
  const auto grant = [](const nlohmann::json& g) {
    return SlurmGrantInfo{JsonInt(g, "job_id"), Printable(JsonString(g, "nodes")),
                          OptionalInt(g, "worker")};
  };
  for (const nlohmann::json& g : JsonArray(job, "slurm_grants")) {
    if (g.is_object()) info.slurm_grants.push_back(grant(g));
  }
  if (const nlohmann::json* slurm = JsonField(job, "slurm");
      info.slurm_grants.empty() && slurm && slurm->is_object()) {
    info.slurm_grants.push_back(grant(*slurm));
  }
  if (const nlohmann::json* metrics = JsonField(job, "metrics"); metrics && metrics->is_object()) {
    for (const auto& [name, value] : metrics->items()) {
      // NaN travels as null, the infinities as "inf" and "-inf" (store/metric_value.h).
      if (const std::optional<double> v = store::MetricValueFromJson(value)) {
        info.metrics.emplace_back(Printable(name), *v);
      }
    }
  }
  for (const nlohmann::json& w : JsonArray(job, "workers")) {
    info.workers.push_back({JsonInt(w, "rank"), Printable(JsonString(w, "role")),
                            Printable(JsonString(w, "host")), JsonInt(w, "pid"),
                            Printable(JsonString(w, "state")),
                            OptionalInt(w, "exit_status"), OptionalInt(w, "signal"),
                            JsonNumber(w, "started"), JsonNumber(w, "ended")});
  }
  for (const nlohmann::json& e : JsonArray(job, "events")) {
    info.events.push_back({JsonNumber(e, "time"), Printable(JsonString(e, "from")),
                           Printable(JsonString(e, "to")), Printable(JsonString(e, "reason"))});
  }
  return info;
}

std::string JoinTags(const std::vector<std::string>& tags) {
  std::string text;
  for (const std::string& tag : tags) text += (text.empty() ? "" : ", ") + tag;
  return text;
}

std::vector<std::string> JobStateNames() {
  return {"queued", "starting", "running", "recovering", "succeeded", "failed", "cancelled"};
}

int ExitCodeForState(const std::string& state) {
  if (state == "succeeded") return kExitOk;
  if (state == "cancelled") return kExitInterrupted;
  return kExitFailed;
}

std::string StepOfTotal(const JobInfo& job) {
  std::string text = std::to_string(job.step);
  if (!job.total_steps) return text;
  const double done = static_cast<double>(job.step) / static_cast<double>(*job.total_steps);
  return text + "/" + std::to_string(*job.total_steps) + " (" +
         std::to_string(static_cast<int>(std::clamp(done, 0.0, 1.0) * 100.0)) + "%)";
}

std::string HeadlineMetric(const JobInfo& job) {
  for (const char* wanted :
       {"eval_accuracy", "eval_auc", "eval_mse", "eval_loss", "train_loss", "objective"}) {
    for (const auto& [name, value] : job.metrics) {
      if (name == wanted) return name + " " + FormatMetric(name, value);
    }
  }
  return "-";
}

int DistinctRanks(const JobInfo& job) {
  std::set<std::int64_t> ranks;
  for (const WorkerInfo& w : job.workers) ranks.insert(w.rank);
  return static_cast<int>(ranks.size());
}

void PrintJobDetail(const JobInfo& job, std::ostream& out, bool color, int max_events) {
  const double now = UnixNow();
  out << Paint(color, kBold, "job " + std::to_string(job.id)) << "  " << job.name << '\n';
  out << "  state     " << Paint(color, StateColor(job.state), job.state)
      << (job.reason.empty() ? "" : ": " + job.reason) << '\n';
  out << "  owner     " << (job.owner.empty() ? "-" : job.owner) << '\n';
  out << "  priority  " << job.priority << '\n';
  out << "  tags      " << (job.tags.empty() ? "-" : JoinTags(job.tags)) << '\n';
  out << "  created   " << TimeWithAge(job.created, now) << '\n';
  out << "  updated   " << TimeWithAge(job.updated, now) << '\n';
  out << "  step      " << StepLine(job) << '\n';
  if (const std::string epoch = EpochLine(job); !epoch.empty()) {
    out << "  epoch     " << epoch << '\n';
  }
  out << "  restarts  " << job.restarts << '\n';
  out << "  best      "
      << (job.best_step ? job.best_metric + " " + FormatMetric(job.best_metric, job.best_value) +
                              " at step " + std::to_string(*job.best_step)
                        : "-")
      << '\n';
  if (!job.slurm_grants.empty()) {
    out << "  slurm    ";
    const char* separator = " ";
    for (const SlurmGrantInfo& g : job.slurm_grants) {
      out << separator << "job " << g.job << " on " << g.nodes;
      if (g.worker) out << " (worker " << *g.worker << ')';
      separator = "; ";
    }
    out << '\n';
  }
  const std::string metrics = MetricsLine(job, false);
  out << "  metrics   " << (metrics.empty() ? "-" : metrics) << '\n';
  if (const std::string windows = MetricsLine(job, true); !windows.empty()) {
    out << "  window    " << windows << "  (one worker's last train.log_every steps, not totals)\n";
  }
  if (!job.workers.empty()) {
    out << "workers\n";
    TextTable table({"RANK", "ROLE", "HOST", "PID", "STATE", "EXIT", "STARTED", "ENDED"},
                    {true, false, false, true});
    for (const WorkerInfo& w : job.workers) {
      table.AddRow({{std::to_string(w.rank)},
                    {w.role},
                    {w.host},
                    {w.pid > 0 ? std::to_string(w.pid) : "-"},
                    {w.state, w.state == "running"  ? kCyan
                              : w.state == "killed" ? kRed
                                                    : ""},
                    {WorkerExit(w)},
                    {FormatLocalTime(w.started)},
                    {FormatLocalTime(w.ended)}});
    }
    table.Print(out, color, "  ");
  }
  if (!job.events.empty()) {
    const std::size_t shown = std::min(job.events.size(), static_cast<std::size_t>(max_events));
    const std::size_t skipped = job.events.size() - shown;
    out << "events"
        << (skipped > 0 ? " (the last " + std::to_string(shown) + " of " +
                              std::to_string(job.events.size()) + ")"
                        : "")
        << '\n';
    TextTable table({"TIME", "FROM", "TO", "REASON"}, {});
    for (std::size_t i = skipped; i < job.events.size(); ++i) {
      const EventInfo& e = job.events[i];
      table.AddRow({{FormatLocalTime(e.time)},
                    {e.from.empty() ? "-" : e.from},
                    {e.to, StateColor(e.to)},
                    {e.reason}});
    }
    table.Print(out, color, "  ");
  }
}

void PrintJobTable(const std::vector<JobInfo>& jobs, std::ostream& out, bool color) {
  const double now = UnixNow();
  TextTable table({"ID", "NAME", "STATE", "STEP", "METRIC", "PRI", "OWNER", "UPDATED", "REASON"},
                  {true, false, false, true, false, true});
  for (const JobInfo& job : jobs) {
    table.AddRow({{std::to_string(job.id)},
                  {job.name},
                  {job.state, StateColor(job.state)},
                  {StepOfTotal(job)},
                  {HeadlineMetric(job)},
                  {std::to_string(job.priority)},
                  {job.owner.empty() ? "-" : job.owner},
                  {FormatAge(job.updated, now)},
                  {job.reason}});
  }
  table.Print(out, color);
}

void PrintJobResult(const JobInfo& job, std::ostream& out, bool color) {
  out << "job " << job.id << " (" << job.name << ") "
      << Paint(color, StateColor(job.state), job.state) << " at step " << job.step
      << (job.reason.empty() ? "" : ": " + job.reason) << '\n';
  if (const std::string metrics = MetricsLine(job, false); !metrics.empty()) {
    out << "  " << metrics << '\n';
  }
}

}  // namespace dtrain::cli
