#include "daemon/server/slurm_commands.h"

#include <unistd.h>

#include <charconv>
#include <cstdlib>

namespace dtrain::server {

std::string SlurmJobName(const std::string& node, std::int64_t id) {
  return "dtrain-" + node + "-" + std::to_string(id);
}

int SlurmTaskCores(const config::JobConfig& job) { return job.threads > 0 ? job.threads : 1; }

int FirstAllocationTasks(const config::JobConfig& job) {
  const config::ClusterConfig& c = job.cluster;
  if (!c.Elastic()) return c.Processes();
  return c.Processes() - (c.MostMembers() - c.FewestMembers());
}

std::vector<std::string> SallocArguments(const config::JobConfig& job, const std::string& name,
                                         int tasks) {
  std::vector<std::string> argv = {"salloc", "--no-shell", "--job-name=" + name,
                                   "--ntasks=" + std::to_string(tasks),
                                   "--cpus-per-task=" + std::to_string(SlurmTaskCores(job))};
  const config::SlurmConfig& s = job.slurm;
  if (!s.partition.empty()) argv.push_back("--partition=" + s.partition);
  if (!s.account.empty()) argv.push_back("--account=" + s.account);
  if (!s.time_limit.empty()) argv.push_back("--time=" + s.time_limit);
  if (!s.qos.empty()) argv.push_back("--qos=" + s.qos);
  argv.insert(argv.end(), s.options.begin(), s.options.end());
  return argv;
}

std::optional<std::int64_t> AllocationIdIn(std::string_view line) {
  constexpr std::string_view kMarker = "job allocation ";
  const std::size_t at = line.find(kMarker);
  if (at == std::string_view::npos) return std::nullopt;
  if (line.find("Pending") == std::string_view::npos && !IsGrantLine(line)) return std::nullopt;
  const std::string_view digits = line.substr(at + kMarker.size());
  std::int64_t id = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
  if (error != std::errc() || end == digits.data() || id <= 0) return std::nullopt;
  return id;
}

bool IsGrantLine(std::string_view line) {
  return line.find("Granted job allocation ") != std::string_view::npos;
}

std::string ScontrolField(std::string_view line, std::string_view field) {
  std::size_t from = 0;
  while (from < line.size()) {
    const std::size_t start = line.find_first_not_of(' ', from);
    if (start == std::string_view::npos) break;
    std::size_t end = line.find(' ', start);
    if (end == std::string_view::npos) end = line.size();
    const std::string_view pair = line.substr(start, end - start);
    if (pair.size() > field.size() && pair.substr(0, field.size()) == field &&
        pair[field.size()] == '=') {
      return std::string(pair.substr(field.size() + 1));
    }
    from = end;
  }
  return "";
}

std::optional<std::string> FindProgram(std::string_view name) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!dirs.empty()) {
    const std::size_t colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
    if (dir.empty()) continue;
    std::string candidate = std::string(dir) + "/" + std::string(name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

std::string DescribeSlurmEnd(std::string_view state, std::string_view reason, std::int64_t id,
                             const config::SlurmConfig& slurm) {
  const std::string job = "Slurm job " + std::to_string(id);
  if (state == "TIMEOUT" || reason == "TimeLimit") {
    return job + " reached its time limit" +
           (slurm.time_limit.empty() ? std::string(" (the partition's)")
                                     : " (slurm.time_limit = \"" + slurm.time_limit + "\")");
  }
  if (state == "PREEMPTED") return job + " was preempted by Slurm";
  if (state == "NODE_FAIL" || reason == "NodeDown") return job + " lost a node (Slurm: NODE_FAIL)";
  if (state == "DEADLINE") return job + " reached its deadline";
  if (state == "BOOT_FAIL") return job + " could not boot its nodes (Slurm: BOOT_FAIL)";
  return "";
}

}  // namespace dtrain::server
