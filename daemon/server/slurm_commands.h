// The Slurm commands a coordinating daemon runs for a job with cluster.scheduler = "slurm", and
// what it reads from their output. Pure functions: safe for concurrent use.
//
//   argv = SallocArguments(job, SlurmJobName("node-1", 7), FirstAllocationTasks(job));  // as owner
//   if (auto id = AllocationIdIn("salloc: Granted job allocation 812")) ...   // 812
//   std::string nodes = ScontrolField(line, "NodeList");                 // "node[3-4]"
//   std::string why = DescribeSlurmEnd("TIMEOUT", "TimeLimit", 812, job.slurm);  // "": ordinary
//
// FindProgram reads this process's PATH. One allocation per attempt (`salloc --no-shell`, one task
// per process, the cores of the job's widest process each), then one `srun` step per process in it
// (worker/slurm_task.h); an elastic job's first allocation holds its min_workers replicas and each
// further replica is an allocation of one task (slurm_growth.cc). Program names are looked up on
// PATH when they run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/job.h"

namespace dtrain::server {

// The Slurm job name of the allocations of dtrain job `id` coordinated by daemon `node`: unique
// per daemon and job, so a daemon that restarts can cancel what its predecessor left.
std::string SlurmJobName(const std::string& node, std::int64_t id);

// Cores each Slurm task of the job asks for: train.threads, or 1 when automatic.
int SlurmTaskCores(const config::JobConfig& job);

// The tasks of an attempt's first allocation: one per process of the job, but for an elastic job
// only cluster.FewestMembers() of its replicas (the others are allocations of their own).
int FirstAllocationTasks(const config::JobConfig& job);

// An allocation of `tasks` tasks, SlurmTaskCores each, with the job's Slurm keys.
std::vector<std::string> SallocArguments(const config::JobConfig& job, const std::string& name,
                                         int tasks);

// The Slurm job id in salloc's "Pending job allocation N" or "Granted job allocation N".
std::optional<std::int64_t> AllocationIdIn(std::string_view line);
bool IsGrantLine(std::string_view line);

// The value of `field` in `scontrol show job -o`'s one-line output ("JobState=TIMEOUT ..."),
// or "" when absent.
std::string ScontrolField(std::string_view line, std::string_view field);

// The path of program `name` on PATH (an executable file), or nullopt.
std::optional<std::string> FindProgram(std::string_view name);

// Why Slurm ended allocation `id`, from scontrol's JobState and Reason, when it was not the
// job's own doing: a time limit (TIMEOUT, or Reason=TimeLimit while the job is still
// COMPLETING), preemption, a lost node, a deadline, a boot failure; "" otherwise.
std::string DescribeSlurmEnd(std::string_view state, std::string_view reason, std::int64_t id,
                             const config::SlurmConfig& slurm);

}  // namespace dtrain::server
