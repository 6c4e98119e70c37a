#include "daemon/store/records.h"

#include <algorithm>
#include <limits>

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
constexpr std::string_view kGrantWorker = " for worker ";

// Digits only, at most 18 of them (no overflow); nullopt otherwise.
std::optional<std::int64_t> Count(std::string_view digits) {
  if (digits.empty() || digits.size() > 18 ||
      digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  return std::stoll(std::string(digits));
}

// The grant an event's reason notes, if it is one.
std::optional<SlurmGrant> GrantIn(std::string_view reason) {
  if (reason.substr(0, kGrantPrefix.size()) != kGrantPrefix) return std::nullopt;
  const std::size_t middle = reason.find(kGrantMiddle);
  if (middle == std::string_view::npos) return std::nullopt;
  const std::optional<std::int64_t> job =
      Count(reason.substr(kGrantPrefix.size(), middle - kGrantPrefix.size()));
  if (!job) return std::nullopt;
  SlurmGrant grant{*job, std::string(reason.substr(middle + kGrantMiddle.size())), std::nullopt};
  // " for worker N" after the node list (which never holds it) names the further replica.
  if (const std::size_t at = grant.nodes.rfind(kGrantWorker); at != std::string::npos) {
    const std::optional<std::int64_t> worker =
        Count(std::string_view(grant.nodes).substr(at + kGrantWorker.size()));
    if (worker && *worker <= std::numeric_limits<int>::max()) {
      grant.worker = static_cast<int>(*worker);
      grant.nodes.resize(at);
    }
  }
  return grant;
}
}  // namespace

std::string SlurmGrantReason(const SlurmGrant& grant) {
  std::string reason = std::string(kGrantPrefix) + std::to_string(grant.job) +
                       std::string(kGrantMiddle) + grant.nodes;
  if (grant.worker) reason += std::string(kGrantWorker) + std::to_string(*grant.worker);
  return reason;
}

std::optional<SlurmGrant> NewestSlurmGrant(std::span<const EventRecord> events) {
  for (auto e = events.rbegin(); e != events.rend(); ++e) {
    if (std::optional<SlurmGrant> grant = GrantIn(e->reason)) return grant;
  }
  return std::nullopt;
}

std::vector<SlurmGrant> AttemptSlurmGrants(std::span<const EventRecord> events) {
  std::vector<SlurmGrant> grants;
  for (auto e = events.rbegin(); e != events.rend(); ++e) {
    std::optional<SlurmGrant> grant = GrantIn(e->reason);
    if (!grant) continue;
    const bool allocation = !grant->worker;
    grants.push_back(std::move(*grant));
    if (allocation) break;  // the attempt's first
  }
  std::ranges::reverse(grants);
  return grants;
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
