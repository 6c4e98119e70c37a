// WorkerStop: how a job process says it finished, in the `stop` field of its worker_done message
// (daemon/control_protocol.md). The worker names it, the coordinator's attempt machine judges it;
// both go through this one enum and its one table of wire names, so neither matches raw strings.
//
//   SayDone(upstream, WorkerStop::kCompleted, steps);                  // the worker
//   std::optional<WorkerStop> stop = ParseWorkerStop(field);           // the coordinator
//   if (stop && IsHopeless(*stop)) ...;                                // no restart can mend it
//
// Invariants: every value has exactly one wire name, and the names never change (old workers
// and daemons of a mixed-version cluster read them); an unknown name parses to nullopt.
#pragma once

#include <optional>
#include <string_view>

#include "core/train/trainer.h"

namespace dtrain::worker {

enum class WorkerStop {
  kCompleted,       // it trained all its steps, or stopped early ("completed")
  kTarget,          // it reached the job's target accuracy ("target")
  kRequested,       // it was asked to stop, or its peers agreed to ("requested")
  kNoData,          // the job's data cannot be read on this host ("no_data")
  kOutOfMemory,     // it does not fit its memory ("out_of_memory")
  kDiverged,        // its training loss became non-finite ("diverged")
  kUnsupportedCpu,  // this host's CPU cannot run the job as written ("unsupported_cpu": bf16)
};

std::string_view WireName(WorkerStop stop);
std::optional<WorkerStop> ParseWorkerStop(std::string_view name);

// Where a training run ended, as the worker reports it.
WorkerStop FromStopReason(train::StopReason why);

// No restart can mend it: the coordinator fails the job instead of restarting it.
bool IsHopeless(WorkerStop stop);

}  // namespace dtrain::worker
