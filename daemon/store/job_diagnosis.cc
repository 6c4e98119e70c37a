#include "daemon/store/job_diagnosis.h"

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "core/train/metrics.h"
#include "daemon/store/job_views.h"
#include "daemon/worker/exit_status.h"

namespace dtrain::store {
namespace {

using nlohmann::json;

bool Failed(const WorkerRecord& w) {
  if (w.state == WorkerState::kKilled) return true;
  return w.state == WorkerState::kExited && w.exit_status && *w.exit_status != 0 &&
         *w.exit_status != worker::kExitStopped;
}

std::string SignalName(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  return abbrev != nullptr ? "SIG" + std::string(abbrev) : "signal " + std::to_string(signal);
}

// The first failed process by the rule in the header, or null.
const WorkerRecord* FirstFailedProcess(const std::vector<WorkerRecord>& workers) {
  const WorkerRecord* first = nullptr;
  for (const WorkerRecord& w : workers) {
    if (Failed(w) && w.ended && (first == nullptr || *w.ended < *first->ended)) first = &w;
  }
  if (first == nullptr || first->state == WorkerState::kKilled) return first;
  const WorkerRecord* killed = nullptr;
  for (const WorkerRecord& w : workers) {
    if (w.state == WorkerState::kKilled && w.ended && *w.ended - *first->ended < kPeerDeathSeconds &&
        (killed == nullptr || *w.ended < *killed->ended)) {
      killed = &w;
    }
  }
  return killed != nullptr ? killed : first;
}

bool IsLoss(std::string_view name) {
  return name.ends_with("loss") || name.ends_with("mse");
}

// The furthest step the job had recorded by `time`, in a metric or a checkpoint (a job that
// logs metrics less often than it checkpoints may have only the checkpoint), as its status counts.
std::int64_t StepBy(const std::vector<MetricRow>& metrics,
                    const std::vector<CheckpointInfo>& checkpoints, double time) {
  std::int64_t step = 0;
  for (const MetricRow& m : metrics) {
    if (m.time <= time) step = std::max(step, m.step);
  }
  for (const CheckpointInfo& c : checkpoints) {
    if (c.time <= time) step = std::max(step, c.step);
  }
  return step;
}

// The last `count` lines accepted by `keep`, oldest first.
template <typename Keep>
Result<json> LastLines(Store& store, std::int64_t job, std::size_t count, Keep keep) {
  std::deque<LogRow> last;
  std::int64_t after = 0;
  constexpr std::size_t kPage = 10000;
  while (count > 0) {
    Result<std::vector<LogRow>> page = store.Logs(job, after, kPage);
    if (!page.ok()) return page.status();
    for (LogRow& row : page.value()) {
      after = row.id;
      if (!keep(row)) continue;
      last.push_back(std::move(row));
      if (last.size() > count) last.pop_front();
    }
    if (page.value().size() < kPage) break;
  }
  json lines = json::array();
  for (const LogRow& row : last) {
    lines.push_back({{"worker", row.worker}, {"stream", row.stream}, {"time", row.time},
                     {"line", row.line}});
  }
  return lines;
}

// When the next process of `w`'s rank started (a restarted attempt's), or +infinity: the lines
// of that rank from then on are not `w`'s.
double NextOfRank(const std::vector<WorkerRecord>& workers, const WorkerRecord& w) {
  double next = std::numeric_limits<double>::infinity();
  for (const WorkerRecord& other : workers) {
    if (other.rank == w.rank && other.started > w.started) next = std::min(next, other.started);
  }
  return next;
}

std::string DescribeProcess(const WorkerRecord& w) {
  return "worker rank " + std::to_string(w.rank) + " (" + w.role + " on " + w.host + ", pid " +
         std::to_string(w.pid) + ")";
}

std::string DescribeEnd(const WorkerRecord& w) {
  if (w.state == WorkerState::kKilled && w.signal) {
    return "was killed by " + SignalName(*w.signal) + " (" + std::to_string(*w.signal) + ")";
  }
  return "exited with status " + std::to_string(w.exit_status.value_or(-1));
}

std::string AdviceForProcess(const WorkerRecord& w, std::int64_t job) {
  if (w.state == WorkerState::kKilled && w.signal) {
    switch (*w.signal) {
      case SIGKILL:
        return "SIGKILL comes from outside dtrain, most often the kernel's out-of-memory killer: "
               "look for it in `journalctl -k` on " + w.host +
               ", and give the job a [train] memory_limit it can live in";
      case SIGSEGV:
      case SIGBUS:
      case SIGABRT:
      case SIGILL:
      case SIGFPE:
        return "the process crashed: report it with the lines above and the job file";
      default:
        return "something outside dtrain sent " + SignalName(*w.signal) + " to pid " +
               std::to_string(w.pid) + " on " + w.host;
    }
  }
  return "its own error is in the lines above; all of them: dtrain logs " + std::to_string(job) +
         " --worker " + std::to_string(w.rank);
}

}  // namespace

Result<json> DiagnoseJob(Store& store, std::int64_t id, std::size_t log_lines) {
  Result<json> job = StoredJobJson(store, id, false);
  if (!job.ok()) return job.status();
  Result<std::vector<WorkerRecord>> workers = store.Workers(id);
  if (!workers.ok()) return workers.status();
  Result<std::vector<EventRecord>> events = store.Events(id);
  if (!events.ok()) return events.status();
  Result<std::vector<MetricRow>> metrics = store.Metrics(id, "");
  if (!metrics.ok()) return metrics.status();
  Result<std::vector<CheckpointInfo>> checkpoints = store.Checkpoints(id);
  if (!checkpoints.ok()) return checkpoints.status();

  // The candidates, each with its time.
  const WorkerRecord* process = FirstFailedProcess(workers.value());
  const MetricRow* non_finite = nullptr;
  for (const MetricRow& m : metrics.value()) {
    // Metrics are stamped when a batch of them is committed: the step orders them.
    if (IsLoss(m.name) && !std::isfinite(m.value) &&
        (non_finite == nullptr || m.step < non_finite->step ||
         (m.step == non_finite->step && m.time < non_finite->time))) {
      non_finite = &m;
    }
  }
  const EventRecord* cancelled = nullptr;
  const EventRecord* failed = nullptr;
  json restarts = json::array();
  for (const EventRecord& e : events.value()) {
    if (e.to == JobState::kCancelled) cancelled = &e;
    if (e.to == JobState::kFailed) failed = &e;
    if (e.reason.rfind("restart ", 0) == 0) restarts.push_back(EventJson(e));
  }

  enum class Kind { kNone, kProcess, kNonFinite, kCancelled, kFailed };
  Kind kind = Kind::kNone;
  double when = 0.0;
  const auto consider = [&](Kind k, double t) {
    if (kind == Kind::kNone || t < when) kind = k, when = t;
  };
  if (process != nullptr) consider(Kind::kProcess, *process->ended);
  if (non_finite != nullptr) consider(Kind::kNonFinite, non_finite->time);
  if (cancelled != nullptr) consider(Kind::kCancelled, cancelled->time);
  if (failed != nullptr && process == nullptr) consider(Kind::kFailed, failed->time);

  std::int64_t step = kind == Kind::kNone ? job.value()["step"].get<std::int64_t>()
                                          : StepBy(metrics.value(), checkpoints.value(), when);
  // The checkpoints it had reached may since have been pruned: the step kept with it counts too.
  if (kind == Kind::kProcess) step = std::max(step, process->ended_step.value_or(0));
  json cause = {{"kind", "none"}, {"time", nullptr}, {"step", step}};
  json next = json::array();
  Result<json> lines = json::array();
  switch (kind) {
    case Kind::kProcess: {
      const WorkerRecord& w = *process;
      cause = {{"kind", "process"},
               {"time", when},
               {"step", step},
               {"summary", DescribeProcess(w) + " " + DescribeEnd(w) + " at step " +
                               std::to_string(step)},
               {"process", WorkerJson(w)}};
      cause["process"]["signal_name"] = w.signal ? json(SignalName(*w.signal)) : json(nullptr);
      next.push_back(AdviceForProcess(w, id));
      const double successor = NextOfRank(workers.value(), w);
      lines = LastLines(store, id, log_lines, [&w, successor](const LogRow& r) {
        return r.worker == w.rank && r.stream != "daemon" && r.time >= w.started &&
               r.time <= *w.ended + kPeerDeathSeconds && r.time < successor;
      });
      break;
    }
    case Kind::kNonFinite: {
      const MetricRow& m = *non_finite;
      cause = {{"kind", "non_finite"},
               {"time", when},
               {"step", m.step},
               {"summary", m.name + " of worker rank " + std::to_string(m.worker) +
                               " became non-finite at step " + std::to_string(m.step)}};
      next.push_back("the training diverged: lower optimizer.lr, or bound the steps with "
                     "train.clip_norm; check the data's scale (data.scale = \"standardize\")");
      lines = LastLines(store, id, log_lines, [&m](const LogRow& r) {
        return r.worker == m.worker && r.stream != "daemon" && r.time <= m.time + 1.0;
      });
      break;
    }
    case Kind::kCancelled:
      cause = {{"kind", "cancelled"},
               {"time", when},
               {"step", step},
               {"summary", cancelled->reason + " at step " + std::to_string(step)}};
      next.push_back("nothing failed: the job was cancelled");
      lines = LastLines(store, id, log_lines, [when](const LogRow& r) { return r.time <= when; });
      break;
    case Kind::kFailed:
      cause = {{"kind", "failed"},
               {"time", when},
               {"step", step},
               {"summary", failed->reason}};
      next.push_back("no process failed: the reason above says what the job lacked; fix it and "
                     "submit the job again");
      lines = LastLines(store, id, log_lines, [when](const LogRow& r) { return r.time <= when; });
      break;
    case Kind::kNone:
      cause["summary"] = restarts.empty() ? "nothing went wrong" : "it recovered from every fault";
      break;
  }
  if (!lines.ok()) return lines.status();
  for (auto m = metrics.value().rbegin(); m != metrics.value().rend(); ++m) {
    if (m->name != train::kNonzeroWeights) continue;
    if (m->value == 0.0) {
      next.push_back("the trained model is all zeros (nonzero_weights 0 at step " +
                     std::to_string(m->step) +
                     "): it predicts the same for every row; with optimizer.type = \"ftrl\", "
                     "optimizer.l1 zeroes every weight whose summed gradient stays within it: "
                     "lower it");
    }
    break;
  }
  if (process != nullptr && kind != Kind::kProcess) {
    next.push_back("later, " + DescribeProcess(*process) + " " + DescribeEnd(*process));
  }

  json out = {{"job", id},
              {"name", job.value()["name"]},
              {"state", job.value()["state"]},
              {"reason", job.value()["reason"]},
              {"step", job.value()["step"]},
              {"cause", std::move(cause)},
              {"last_lines", std::move(lines).value()},
              {"non_finite", nullptr},
              {"restarts", std::move(restarts)},
              {"newest_checkpoint", checkpoints.value().empty()
                                        ? json(nullptr)
                                        : json(checkpoints.value().back().step)},
              {"next", std::move(next)}};
  if (non_finite != nullptr) {
    out["non_finite"] = {{"name", non_finite->name},
                         {"step", non_finite->step},
                         {"worker", non_finite->worker},
                         {"time", non_finite->time}};
  }
  return out;
}

}  // namespace dtrain::store
