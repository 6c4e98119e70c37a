#include "daemon/store/records.h"

#include "core/name_table.h"

namespace dtrain::store {
namespace {

constexpr NameTable<JobState, 7> kJobStates{
    {{{JobState::kQueued, "queued"},
      {JobState::kStarting, "starting"},
      {JobState::kRunning, "running"},
      {JobState::kRecovering, "recovering"},
      {JobState::kSucceeded, "succeeded"},
      {JobState::kFailed, "failed"},
      {JobState::kCancelled, "cancelled"}}},
    "queued, starting, running, recovering, succeeded, failed, cancelled"};

constexpr NameTable<WorkerState, 3> kWorkerStates{{{{WorkerState::kRunning, "running"},
                                                           {WorkerState::kExited, "exited"},
                                                           {WorkerState::kKilled, "killed"}}},
                                                         "running, exited, killed"};

constexpr NameTable<SweepState, 4> kSweepStates{{{{SweepState::kRunning, "running"},
                                                  {SweepState::kSucceeded, "succeeded"},
                                                  {SweepState::kFailed, "failed"},
                                                  {SweepState::kCancelled, "cancelled"}}},
                                                "running, succeeded, failed, cancelled"};

}  // namespace

std::string_view SweepStateName(SweepState state) { return kSweepStates.Name(state); }

Result<SweepState> ParseSweepState(std::string_view name) {
  return kSweepStates.Parse(name, "sweep state");
}

std::string_view JobStateName(JobState state) { return kJobStates.Name(state); }

Result<JobState> ParseJobState(std::string_view name) {
  return kJobStates.Parse(name, "job state");
}

bool IsTerminal(JobState state) {
  return state == JobState::kSucceeded || state == JobState::kFailed ||
         state == JobState::kCancelled;
}

int CountRestarts(std::span<const EventRecord> events) {
  int restarts = 0;
  for (const EventRecord& e : events) restarts += e.reason.rfind("restart ", 0) == 0 ? 1 : 0;
  return restarts;
}

namespace {
constexpr std::string_view kGrantPrefix = "Slurm job ";
constexpr std::string_view kGrantMiddle = " granted on ";
}  // namespace

std::string SlurmGrantReason(const SlurmGrant& grant) {
  return std::string(kGrantPrefix) + std::to_string(grant.job) + std::string(kGrantMiddle) +
         grant.nodes;
}

std::optional<SlurmGrant> NewestSlurmGrant(std::span<const EventRecord> events) {
  for (auto e = events.rbegin(); e != events.rend(); ++e) {
    const std::string_view reason = e->reason;
    if (reason.substr(0, kGrantPrefix.size()) != kGrantPrefix) continue;
    const std::size_t middle = reason.find(kGrantMiddle);
    if (middle == std::string_view::npos) continue;
    const std::string digits(reason.substr(kGrantPrefix.size(), middle - kGrantPrefix.size()));
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
        digits.size() > 18) {
      continue;
    }
    return SlurmGrant{std::stoll(digits), std::string(reason.substr(middle + kGrantMiddle.size()))};
  }
  return std::nullopt;
}

bool IsValidTransition(JobState from, JobState to) {
  // The ways out of a terminal state: a failed or cancelled job resumed by its owner; a
  // succeeded one continued from its checkpoint with more steps (an ASHA promotion).
  if (to == JobState::kQueued) {
    return from == JobState::kFailed || from == JobState::kCancelled ||
           from == JobState::kSucceeded;
  }
  if (IsTerminal(from)) return false;
  switch (to) {
    case JobState::kQueued:
      return false;
    case JobState::kStarting:
      return from == JobState::kQueued;
    case JobState::kRunning:
      return from == JobState::kStarting || from == JobState::kRecovering;
    case JobState::kRecovering:  // from starting: its worker died before training began
      return from == JobState::kRunning || from == JobState::kStarting;
    case JobState::kSucceeded:
      return from == JobState::kRunning;
    case JobState::kFailed:
    case JobState::kCancelled:
      return true;
  }
  return false;
}

std::string_view WorkerStateName(WorkerState state) { return kWorkerStates.Name(state); }

Result<WorkerState> ParseWorkerState(std::string_view name) {
  return kWorkerStates.Parse(name, "worker state");
}

}  // namespace dtrain::store
