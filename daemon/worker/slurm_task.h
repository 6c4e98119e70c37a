// SlurmTaskMain: the local stand-in of a job process that Slurm runs (`dtraind slurm-task ...`,
// started by the coordinating daemon, as the job's owner, in place of `dtraind worker` for a job
// with cluster.scheduler = "slurm"). It runs `srun` for one task in the attempt's allocation —
// the task being `dtraind worker --connect COORDINATOR`, which connects back to this daemon's
// TCP listener — and passes its token to srun's standard input, which srun forwards to the task
// (never a command line or environment). srun relays the task's lines, so the coordinator's
// supervisor captures them as a local worker's. A SIGTERM or SIGINT here becomes SIGUSR1 to srun,
// which forwards it, and the worker stops after a checkpoint (srun itself would cancel the step
// on SIGTERM). srun runs in a process group of its own with SIGTERM as its parent-death signal:
// when this process is killed (SIGKILL after the grace period, or with its daemon), srun gets
// SIGTERM and cancels the task, so no task outlives its stand-in.
//
//   return SlurmTaskMain({.allocation = 812, .job = 7, .rank = 1, .cpus = 2,
//                         .coordinator = "10.0.0.1:7070"});
//
// Ends as the task ended: its exit status, or the signal that killed it (srun reports a task
// killed by signal N as status 128 + N). Exit status 1 when srun cannot be started.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace dtrain::worker {

struct SlurmTaskArgs {
  std::int64_t allocation = 0;  // the attempt's Slurm job id
  std::int64_t job = 0;         // the dtrain job and the process's rank
  int rank = 0;
  int cpus = 1;                 // cores the task gets
  std::string coordinator;      // the coordinating daemon's listener, HOST:PORT
};

// The hidden `slurm-task` subcommand; `args` must outlive the parse.
CLI::App* AddSlurmTaskCommand(CLI::App& app, SlurmTaskArgs& args);

// srun's arguments for the task: `exe` is dtraind's path (the same on every node).
std::vector<std::string> SrunArguments(const SlurmTaskArgs& args, const std::string& exe);

int SlurmTaskMain(const SlurmTaskArgs& args);

}  // namespace dtrain::worker
