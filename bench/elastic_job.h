// What bench_elastic_chaos reads of an elastic sync job: its replicas' pids and the regroup
// events in its JOB object (`dtrain status --json`), its replicas' training processes in the
// hosts' namespaces, and the progress a loss cost from the times of its metric rows. All times
// are seconds since the epoch on this machine's clock, which the daemons, the workers and the
// bench share.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench/netns_jobs.h"

namespace dtrain::bench {

// The pid of the running process of replica `rank`, as the job's worker rows say; -1 if none runs.
inline pid_t RunningPid(const nlohmann::json& job, int rank) {
  for (const nlohmann::json& w : job["workers"]) {
    if (w["state"] == "running" && w["rank"] == rank) return w["pid"].get<pid_t>();
  }
  return -1;
}

// The running pid of each of replicas 0..replicas-1 (-1 where none runs).
inline std::vector<pid_t> RunningPids(const nlohmann::json& job, int replicas) {
  std::vector<pid_t> pids;
  for (int r = 0; r < replicas; ++r) pids.push_back(RunningPid(job, r));
  return pids;
}

// The training process of replica `rank` of job `id` in `host`: the `dtraind worker --job ID
// --rank R` running there; -1 if none does. A replica on a peer has it there, while its worker
// row carries the pid of its stand-in on the coordinator's host (`dtraind remote-worker`, which
// ends with it and whose end ends it).
inline pid_t TrainingProcess(const testing::NetnsCluster& netns, int host, std::int64_t id,
                             int rank) {
  const std::vector<std::string> wanted = {"worker", "--job", std::to_string(id), "--rank",
                                           std::to_string(rank)};
  for (const pid_t pid : netns.Pids(host)) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
    std::vector<std::string> argv;
    for (std::string arg; std::getline(in, arg, '\0');) argv.push_back(arg);
    if (argv.size() > wanted.size() && std::equal(wanted.begin(), wanted.end(), argv.begin() + 1)) {
      return pid;
    }
  }
  return -1;
}

// The `started` time of the worker row of process `pid`, if the job has one.
inline std::optional<double> StartedTime(const nlohmann::json& job, pid_t pid) {
  for (const nlohmann::json& w : job["workers"]) {
    if (w["pid"] == pid) return w["started"].get<double>();
  }
  return std::nullopt;
}

// The job's events whose reason contains `text`, in the order they happened.
inline std::vector<nlohmann::json> EventsSaying(const nlohmann::json& job,
                                                const std::string& text) {
  std::vector<nlohmann::json> found;
  for (const nlohmann::json& e : job["events"]) {
    if (e["reason"].get<std::string>().find(text) != std::string::npos) found.push_back(e);
  }
  return found;
}

// The earliest time any replica recorded each step (rows of WorkerRows): in a sync ring they take
// a step together, and a step redone after a regroup keeps its first time.
inline std::map<std::int64_t, double> FirstTimeOfSteps(
    const std::map<int, std::vector<MetricSample>>& rows) {
  std::map<std::int64_t, double> first;
  for (const auto& [worker, points] : rows) {
    for (const MetricSample& p : points) {
      const auto [at, inserted] = first.emplace(p.step, p.time);
      if (!inserted && p.time < at->second) at->second = p.time;
    }
  }
  return first;
}

// The progress a loss at `kill_time` cost, in seconds: from the last logged step before the kill
// (S, first recorded at t) to the first logged step past it (S', at t'), t' - t less the time
// S' - S steps take at `seconds_per_step` (the undisturbed pace). Empty when no step was logged
// before the kill or none after it.
inline std::optional<double> LostSeconds(const std::map<std::int64_t, double>& first_time,
                                         double kill_time, double seconds_per_step) {
  const auto before = std::find_if(first_time.rbegin(), first_time.rend(),
                                   [&](const auto& step) { return step.second <= kill_time; });
  if (before == first_time.rend()) return std::nullopt;
  const auto after = first_time.upper_bound(before->first);
  if (after == first_time.end()) return std::nullopt;
  return after->second - before->second -
         static_cast<double>(after->first - before->first) * seconds_per_step;
}

}  // namespace dtrain::bench
