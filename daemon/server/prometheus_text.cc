#include "daemon/server/prometheus_text.h"

#include <charconv>
#include <cmath>
#include <map>

namespace dtrain::server {
namespace {

using nlohmann::json;

constexpr store::JobState kAllStates[] = {
    store::JobState::kQueued,    store::JobState::kStarting, store::JobState::kRunning,
    store::JobState::kRecovering, store::JobState::kSucceeded, store::JobState::kFailed,
    store::JobState::kCancelled};

// A label value with backslash, double quote and line feed escaped, as the format requires.
std::string Escaped(std::string_view value) {
  std::string out;
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[32];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return ec == std::errc() ? std::string(buffer, end) : "NaN";
}

// One family: its HELP and TYPE lines, then the samples added to it, in text().
class Family {
 public:
  // (append, not operator+: GCC 12 warns falsely, -Wrestrict, on chains of string +.)
  Family(std::string_view name, std::string_view type, std::string_view help) : name_(name) {
    text_.append("# HELP ").append(name_).append(" ").append(help).append("\n");
    text_.append("# TYPE ").append(name_).append(" ").append(type).append("\n");
  }
  Family& Sample(const std::vector<std::pair<std::string, std::string>>& labels, double value) {
    text_ += name_;
    if (!labels.empty()) {
      text_ += '{';
      for (std::size_t i = 0; i < labels.size(); ++i) {
        if (i > 0) text_ += ',';
        text_.append(labels[i].first).append("=\"").append(Escaped(labels[i].second)).append("\"");
      }
      text_ += '}';
    }
    text_.append(" ").append(Number(value)).append("\n");
    return *this;
  }
  const std::string& text() const { return text_; }

 private:
  std::string name_;
  std::string text_;
};

using Labels = std::vector<std::pair<std::string, std::string>>;

Labels JobLabels(const json& job) {
  return {{"job", std::to_string(job["id"].get<std::int64_t>())},
          {"name", job["name"].get<std::string>()}};
}

// The job's newest value of `metric` as status shows it, if recorded and a number.
std::optional<double> StatusMetric(const json& job, const char* metric) {
  const auto it = job["metrics"].find(metric);
  if (it == job["metrics"].end()) return std::nullopt;
  if (it->is_null()) return std::nan("");  // a non-finite value travels as null
  return it->get<double>();
}

}  // namespace

std::vector<std::string> SummedWorkerMetrics() {
  return {"compute_seconds", "comm_seconds", "bytes_sent",
          "bytes_received",  "wire_bytes",   "exposed_comm_seconds"};
}

std::string PrometheusText(const PrometheusSnapshot& s) {
  std::string out = Family("dtrain_build_info", "gauge", "The daemon's version, as a label; always 1.")
                        .Sample({{"version", s.version}}, 1)
                        .text();

  std::map<store::JobState, std::int64_t> counts;
  for (const auto& [state, count] : s.jobs_by_state) counts[state] = count;
  Family jobs("dtrain_jobs", "gauge", "Jobs in the store, by state.");
  for (const store::JobState state : kAllStates) {
    jobs.Sample({{"state", std::string(store::JobStateName(state))}},
                static_cast<double>(counts[state]));
  }
  out += jobs.text();
  out += Family("dtrain_queue_length", "gauge", "Jobs queued, waiting to run.")
             .Sample({}, s.queue_length)
             .text();

  Family step("dtrain_job_step", "gauge", "The furthest step an active job has reached.");
  Family steps_per_second("dtrain_job_steps_per_second", "gauge",
                          "An active job's steps per second, from its lead worker's newest rate.");
  Family samples_per_second("dtrain_job_samples_per_second", "gauge",
                            "An active job's training rows per second, over all its workers.");
  Family loss("dtrain_job_loss", "gauge", "An active job's newest training loss.");
  Family accuracy("dtrain_job_eval_accuracy", "gauge",
                  "An active job's newest evaluation accuracy (0 to 1).");
  Family restarts("dtrain_job_restarts_total", "counter",
                  "Restarts of an active job after a failure.");
  for (const ActiveJobSample& a : s.active) {
    const Labels labels = JobLabels(a.job);
    step.Sample(labels, static_cast<double>(a.job["step"].get<std::int64_t>()));
    if (!a.newest_rates.empty()) {
      double sum = 0.0;
      std::optional<double> lead;
      for (const store::MetricRow& r : a.newest_rates) {
        sum += r.value;
        if (r.worker == a.lead_rank) lead = r.value;
      }
      samples_per_second.Sample(labels, sum);
      if (lead && a.batch_size > 0) steps_per_second.Sample(labels, *lead / a.batch_size);
    }
    if (const std::optional<double> v = StatusMetric(a.job, "train_loss")) loss.Sample(labels, *v);
    if (const std::optional<double> v = StatusMetric(a.job, "eval_accuracy")) {
      accuracy.Sample(labels, *v);
    }
    restarts.Sample(labels, a.job["restarts"].get<int>());
  }
  for (const Family* f : {&step, &steps_per_second, &samples_per_second, &loss, &accuracy,
                          &restarts}) {
    out += f->text();
  }

  struct WorkerFamily {
    const char* metric;
    const char* name;
    const char* help;
  };
  constexpr WorkerFamily kWorkerFamilies[] = {
      {"compute_seconds", "dtrain_worker_compute_seconds_total",
       "Seconds a worker of an active job spent computing."},
      {"comm_seconds", "dtrain_worker_comm_seconds_total",
       "Seconds a worker of an active job spent communicating, waits included."},
      {"bytes_sent", "dtrain_worker_sent_bytes_total",
       "Bytes a worker of an active job sent to its peers or shards."},
      {"bytes_received", "dtrain_worker_received_bytes_total",
       "Bytes a worker of an active job received from its peers or shards."}};
  for (const WorkerFamily& w : kWorkerFamilies) {
    Family family(w.name, "counter", w.help);
    for (const ActiveJobSample& a : s.active) {
      for (const store::MetricRow& r : a.sums) {
        if (r.name != w.metric) continue;
        family.Sample({{"job", std::to_string(a.job["id"].get<std::int64_t>())},
                       {"rank", std::to_string(r.worker)}},
                      r.value);
      }
    }
    out += family.text();
  }

  out += Family("dtrain_store_size_bytes", "gauge",
                "Bytes of the store's SQLite file and its write-ahead log.")
             .Sample({}, static_cast<double>(s.store_bytes))
             .text();
  out += Family("dtrain_peers", "gauge", "Peer daemons this daemon is configured with.")
             .Sample({}, s.peers)
             .text();
  out += Family("dtrain_peers_up", "gauge", "Peer daemons answering heartbeats.")
             .Sample({}, s.peers_up)
             .text();
  return out;
}

}  // namespace dtrain::server
