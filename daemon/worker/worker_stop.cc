#include "daemon/worker/worker_stop.h"

#include "core/name_table.h"

namespace dtrain::worker {
namespace {

constexpr NameTable<WorkerStop, 7> kNames{
    {{{WorkerStop::kCompleted, "completed"},
      {WorkerStop::kTarget, "target"},
      {WorkerStop::kRequested, "requested"},
      {WorkerStop::kNoData, "no_data"},
      {WorkerStop::kOutOfMemory, "out_of_memory"},
      {WorkerStop::kDiverged, "diverged"},
      {WorkerStop::kUnsupportedCpu, "unsupported_cpu"}}},
    "completed, target, requested, no_data, out_of_memory, diverged, unsupported_cpu"};

}  // namespace

std::string_view WireName(WorkerStop stop) { return kNames.Name(stop); }

std::optional<WorkerStop> ParseWorkerStop(std::string_view name) {
  Result<WorkerStop> stop = kNames.Parse(name, "worker stop");
  return stop.ok() ? std::optional(stop.value()) : std::nullopt;
}

WorkerStop FromStopReason(train::StopReason why) {
  switch (why) {
    case train::StopReason::kCompleted:
    case train::StopReason::kEarlyStopped:  // a finish like completing; its reason says more
      return WorkerStop::kCompleted;
    case train::StopReason::kTargetReached:
      return WorkerStop::kTarget;
    case train::StopReason::kRequested:
      return WorkerStop::kRequested;
  }
  return WorkerStop::kRequested;
}

bool IsHopeless(WorkerStop stop) {
  return stop == WorkerStop::kNoData || stop == WorkerStop::kOutOfMemory ||
         stop == WorkerStop::kDiverged || stop == WorkerStop::kUnsupportedCpu;
}

}  // namespace dtrain::worker
