// The processes of a daemon's jobs as a test finds them: by the pids a JOB object (status)
// records of its running workers, checked in /proc. A zombie counts as gone, and a pid recycled
// by another program is no worker.
//
//   for (const pid_t pid : RunningWorkerPids(d.Status(id))) ::kill(pid, SIGSTOP);
//   while (!Stopped(pid) && WorkerAlive(pid)) ...;   // SIGSTOP takes effect asynchronously
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <vector>

#include "common/process.h"

namespace dtrain::testing {

// The state letter of a /proc stat file (R, S, D, T, t, Z, ...); '\0' when it cannot be read
// (the process or thread is gone).
inline char StateInStat(const std::string& stat_path) {
  const std::string stat = ReadFile(stat_path);
  const auto paren = stat.rfind(')');  // the command name may hold anything, ')' included
  if (paren == std::string::npos || paren + 2 >= stat.size()) return '\0';
  return stat[paren + 2];
}

// The command line of the process whose /proc folder is `proc`, its arguments joined by spaces;
// empty when it cannot be read.
inline std::string CommandLineOf(const std::string& proc) {
  std::string cmdline = ReadFile(proc + "/cmdline");
  for (char& c : cmdline) c = c == '\0' ? ' ' : c;
  return cmdline;
}

// The pids of the job's workers its JOB object records as running.
inline std::vector<pid_t> RunningWorkerPids(const nlohmann::json& job) {
  std::vector<pid_t> pids;
  for (const nlohmann::json& w : job["workers"]) {
    if (w["state"] == "running") pids.push_back(w["pid"].get<pid_t>());
  }
  return pids;
}

// Whether `pid` is still a live (not zombie) dtraind worker.
inline bool WorkerAlive(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  const char state = StateInStat(proc + "/stat");
  if (state == '\0' || state == 'Z') return false;
  return CommandLineOf(proc).find(" worker ") != std::string::npos;
}

// Whether every thread of `pid` has stopped (SIGSTOP takes effect asynchronously).
inline bool Stopped(pid_t pid) {
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
    const char state = StateInStat(task.path().string() + "/stat");
    if (state == '\0') continue;  // gone meanwhile
    if (state != 'T' && state != 't') return false;
  }
  return !ec;
}

}  // namespace dtrain::testing
