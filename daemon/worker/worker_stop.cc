#include "daemon/worker/worker_stop.h"

#include <array>
#include <utility>

namespace dtrain::worker {
namespace {

constexpr std::array<std::pair<WorkerStop, std::string_view>, 6> kNames{{
    {WorkerStop::kCompleted, "completed"},
    {WorkerStop::kTarget, "target"},
    {WorkerStop::kRequested, "requested"},
    {WorkerStop::kNoData, "no_data"},
    {WorkerStop::kOutOfMemory, "out_of_memory"},
    {WorkerStop::kDiverged, "diverged"},
}};

}  // namespace

std::string_view WireName(WorkerStop stop) {
  for (const auto& [value, name] : kNames) {
    if (value == stop) return name;
  }
  return "?";
}

std::optional<WorkerStop> ParseWorkerStop(std::string_view name) {
  for (const auto& [value, wire] : kNames) {
    if (wire == name) return value;
  }
  return std::nullopt;
}

WorkerStop FromStopReason(train::StopReason why) {
  switch (why) {
    case train::StopReason::kCompleted:
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
         stop == WorkerStop::kDiverged;
}

}  // namespace dtrain::worker
