// What dtraind's /metrics says, in Prometheus's text exposition format (version 0.0.4): a pure
// function of a snapshot of the daemon, so the format is tested apart from the listener.
//
//   PrometheusSnapshot s = ...;          // built by the web server from the store and the daemon
//   std::string body = PrometheusText(s);
//
// Families (every name has the dtrain_ prefix; counters end in _total, units are seconds and
// bytes):
//   dtrain_build_info{version}                 gauge, 1
//   dtrain_jobs{state}                         gauge: jobs in the store, every state listed
//   dtrain_queue_length                        gauge: jobs waiting to run
//   dtrain_job_step{job,name}                  gauge: as `dtrain status` says, of each active job
//   dtrain_job_steps_per_second{job,name}      gauge: the lead worker's samples/s / batch_size
//   dtrain_job_samples_per_second{job,name}    gauge: the sum of its workers' newest samples/s
//   dtrain_job_loss{job,name}                  gauge: the newest train_loss (status's)
//   dtrain_job_eval_accuracy{job,name}         gauge: the newest eval_accuracy (status's)
//   dtrain_job_restarts_total{job,name}        counter
//   dtrain_worker_compute_seconds_total{job,rank}, dtrain_worker_comm_seconds_total{job,rank},
//   dtrain_worker_sent_bytes_total{job,rank}, dtrain_worker_received_bytes_total{job,rank}
//                                              counters: the sums of the workers' recorded windows
//   dtrain_store_size_bytes                    gauge: the store's file and its write-ahead log
//   dtrain_peers, dtrain_peers_up              gauges: configured peer daemons, those up
// A job is active while queued jobs wait behind it: starting, running or recovering. A value the
// job has not recorded yet (no eval so far) is left out, never made up.
//
// Pure: safe for concurrent use.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/store/records.h"

namespace dtrain::server {

struct ActiveJobSample {
  nlohmann::json job;  // the JOB object `dtrain status --json` shows
  int batch_size = 0;  // rows per step and replica; 0: unknown (no steps/s)
  int lead_rank = 0;   // whose samples/s gives the steps/s
  // Each worker's newest samples_per_sec, and its sums of compute_seconds, comm_seconds,
  // bytes_sent and bytes_received (store::Store::MetricSums).
  std::vector<store::MetricRow> newest_rates;
  std::vector<store::MetricRow> sums;
};

struct PrometheusSnapshot {
  std::string version;
  std::vector<std::pair<store::JobState, std::int64_t>> jobs_by_state;  // absent states: 0
  int queue_length = 0;
  std::vector<ActiveJobSample> active;
  std::int64_t store_bytes = 0;
  int peers = 0, peers_up = 0;
};

// The names of the metrics MetricSums must be asked for.
std::vector<std::string> SummedWorkerMetrics();

std::string PrometheusText(const PrometheusSnapshot& snapshot);

// The content type of PrometheusText's output.
inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace dtrain::server
