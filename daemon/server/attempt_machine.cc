#include "daemon/server/attempt_machine.h"

#include <algorithm>

#include "config/job_layout.h"

namespace dtrain::server {

RestartPolicy RestartPolicyFor(const config::JobConfig& job, int default_max_restarts) {
  const config::ClusterConfig& cluster = job.cluster;
  RestartPolicy policy;
  policy.lead_rank = config::LeadRank(cluster);
  policy.trainers = cluster.Trainers();
  policy.max_restarts = job.max_restarts >= 0 ? job.max_restarts : default_max_restarts;
  for (int rank = 0; rank < cluster.Processes(); ++rank) {
    policy.on_loss.push_back(config::CostOfLosing(job, rank));
  }
  return policy;
}

AttemptMachine::AttemptMachine(std::int64_t job_id, RestartPolicy policy, int restarts)
    : job_id_(job_id), policy_(std::move(policy)), restarts_(restarts) {}

void AttemptMachine::Begin(int processes) {
  processes_.assign(static_cast<std::size_t>(processes), ProcessState{});
  live_ = 0;
  failure_.clear();
  ready_ = false;
}

void AttemptMachine::Spawned(int rank) {
  processes_[Index(rank)].started = true;
  ++live_;
}

void AttemptMachine::Cancel(uid_t by) {
  cancel_requested_ = true;
  cancelled_by_ = by;
}

FailVerdict AttemptMachine::Fail(const std::string& why, bool already_recovering) {
  FailVerdict verdict;
  if (!failure_.empty()) return verdict;
  failure_ = why;
  verdict.first = true;
  // The job is recovering from now, not once the last process has gone. (Whether it restarts is
  // known now too; the last exit then restarts it.)
  if (WillRestart() && !cancel_requested_ && !shutting_down_ && !already_recovering) {
    verdict.recovering = RestartReason();
  }
  return verdict;
}

std::vector<int> AttemptMachine::Done(int rank, std::optional<worker::WorkerStop> stop,
                                      std::int64_t steps, const std::string& reason,
                                      const std::string& who_error) {
  ProcessState& p = processes_[Index(rank)];
  p.done_stop = stop;
  p.steps = steps;
  p.done_reason = reason;
  if (stop && worker::IsHopeless(*stop) && hopeless_.empty()) {
    hopeless_ = who_error;
  }
  std::vector<int> stops;
  if (stop != worker::WorkerStop::kTarget || target_reached_) return stops;
  target_reached_ = true;
  // Collective replicas stop together by their vote; async ones must be told. Shards end once
  // every replica has left.
  for (int r = 0; r < policy_.trainers; ++r) {
    ProcessState& q = processes_[Index(r)];
    if (q.started && !q.exited && !q.stop_sent && !q.done_stop) {
      q.stop_sent = true;
      stops.push_back(r);
    }
  }
  return stops;
}

std::vector<int> AttemptMachine::TakeStops() {
  std::vector<int> stops;
  for (std::size_t r = 0; r < processes_.size(); ++r) {
    ProcessState& p = processes_[r];
    if (p.started && !p.exited && !p.stop_sent) {
      p.stop_sent = true;
      stops.push_back(static_cast<int>(r));
    }
  }
  return stops;
}

config::LostProcess AttemptMachine::Silenced(int rank) {
  processes_[Index(rank)].stop_sent = true;
  return policy_.on_loss[Index(rank)];
}

bool AttemptMachine::StoppedWell(const ProcessState& p) const {
  using worker::WorkerStop;
  return p.done_stop == WorkerStop::kCompleted || p.done_stop == WorkerStop::kTarget ||
         (target_reached_ && p.done_stop == WorkerStop::kRequested);
}

void AttemptMachine::Exited(int rank, ProcessExit exit) {
  ProcessState& p = processes_[Index(rank)];
  p.exited = true;
  p.exit = exit;
  // A replica asked to stop exits with its own status for that (130), after saying so.
  p.ended_well = exit.signal == 0 && StoppedWell(p) &&
                 (exit.exit_status == 0 || p.done_stop == worker::WorkerStop::kRequested);
}

bool AttemptMachine::RestartsAlone(int rank) const {
  const ProcessState& p = processes_[Index(rank)];
  if (p.replacing) return true;
  return !p.ended_well && policy_.on_loss[Index(rank)] == config::LostProcess::kRestartAlone &&
         ready_ && !p.done_stop && !target_reached_ && MayReplace();
}

bool AttemptMachine::WaitsForBlame(int rank) const {
  // A process that failed on its own is often the survivor of a peer that was killed (its link
  // closed): that death gets a moment to arrive, so that the job's reason names the cause.
  const ProcessState& p = processes_[Index(rank)];
  return !p.ended_well && p.exit.signal == 0 && failure_.empty() && live_ > 1;
}

ExitCount AttemptMachine::CountExit(int rank) {
  const ProcessState& p = processes_[Index(rank)];
  ExitCount count;
  count.last = --live_ == 0;
  if (!p.ended_well && !cancel_requested_ && !shutting_down_) {
    if (p.carried_on) {
      count.loss = ExitCount::Loss::kCarryOn;
    } else if (policy_.on_loss[Index(rank)] != config::LostProcess::kCarryOn) {
      count.loss = ExitCount::Loss::kFailsAttempt;
    } else if (!p.stop_sent) {
      count.loss = ExitCount::Loss::kCarryOn;
    }
  }
  return count;
}

std::int64_t AttemptMachine::TargetStep() const {
  // The step of the replica that reached the target (the lowest rank that did).
  for (const ProcessState& p : processes_) {
    if (p.done_stop == worker::WorkerStop::kTarget) return p.steps;
  }
  return Lead().steps;
}

const ProcessState& AttemptMachine::Lead() const {
  const ProcessState& lead = processes_[Index(policy_.lead_rank)];
  if (!lead.carried_on) return lead;
  for (int r = 0; r < policy_.trainers; ++r) {
    if (StoppedWell(processes_[Index(r)])) return processes_[Index(r)];
  }
  return lead;
}

Outcome AttemptMachine::Decide() {
  const ProcessState& lead = Lead();
  // Every process finished well, but one the job can do without may have died on the way.
  bool all_well = true;
  for (std::size_t r = 0; r < processes_.size(); ++r) {
    all_well = all_well && (StoppedWell(processes_[r]) || processes_[r].carried_on ||
                            policy_.on_loss[r] == config::LostProcess::kCarryOn);
  }
  Outcome out;
  if (failure_.empty() && !cancel_requested_ && !shutting_down_ && StoppedWell(lead) && all_well) {
    out.kind = Outcome::Kind::kSucceeded;
    out.reason = target_reached_ ? "reached target accuracy at step " + std::to_string(TargetStep())
                 : !lead.done_reason.empty() ? lead.done_reason
                                             : "completed " + std::to_string(lead.steps) + " steps";
  } else if (cancel_requested_) {
    out.kind = Outcome::Kind::kCancelled;
    out.reason = "cancelled by uid " + std::to_string(cancelled_by_);
  } else if (shutting_down_) {
    out.kind = Outcome::Kind::kLeftForNextStart;
  } else if (WillRestart()) {
    out.kind = Outcome::Kind::kRestart;
    out.reason = RestartReason();
    ++restarts_;
    // A short, growing pause so a worker that dies at once does not spin.
    out.pause = std::chrono::milliseconds(200) * restarts_;
  } else {
    out.kind = Outcome::Kind::kFailed;
    out.reason = failure_ + " (see dtrain logs " + std::to_string(job_id_) + ")";
    if (!hopeless_.empty()) {
      out.reason = hopeless_ + " (not restarted: it would fail the same way)";
    } else if (policy_.max_restarts > 0) {
      out.reason += "; gave up after " + std::to_string(policy_.max_restarts) + " restarts";
    }
  }
  return out;
}

void AttemptMachine::BeginReplacing(const std::vector<int>& ranks) {
  for (int r : ranks) processes_[Index(r)].replacing = true;
}

std::vector<int> AttemptMachine::TakeKills(const std::vector<int>& ranks) {
  std::vector<int> kills;
  for (int r : ranks) {
    ProcessState& q = processes_[Index(r)];
    if (q.replacing && q.started && !q.exited) {
      q.stop_sent = true;
      kills.push_back(r);
    }
  }
  return kills;
}

bool AttemptMachine::MayReplace() const {
  return failure_.empty() && !cancel_requested_ && !shutting_down_ && WillRestart();
}

void AttemptMachine::Respawned(int rank) {
  processes_[Index(rank)] = ProcessState{};
  processes_[Index(rank)].started = true;
}

void AttemptMachine::Added(int rank) {
  processes_[Index(rank)] = ProcessState{};
  Spawned(rank);
}

void AttemptMachine::GiveUpReplacing(const std::vector<int>& ranks, int respawned) {
  for (int r : ranks) processes_[Index(r)].replacing = false;
  // The others' exits were taken without counting them; the caller counts one; those started
  // again are live.
  live_ -= static_cast<int>(ranks.size()) - 1 - respawned;
}

std::string AttemptMachine::RestartReason() const {
  return "restart " + std::to_string(restarts_ + 1) + " of " +
         std::to_string(policy_.max_restarts) + ": " + failure_ +
         "; resuming from the newest checkpoint";
}

}  // namespace dtrain::server
