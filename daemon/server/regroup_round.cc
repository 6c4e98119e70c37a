#include "daemon/server/regroup_round.h"

#include <algorithm>
#include <utility>

namespace dtrain::server {
namespace {

// Drops `rank`'s request from `requests`, if any.
void Forget(std::vector<RegroupRequest>& requests, int rank) {
  std::erase_if(requests, [rank](const RegroupRequest& r) { return r.rank == rank; });
}

// Keeps `request` as its rank's latest.
void Keep(std::vector<RegroupRequest>& requests, const RegroupRequest& request) {
  Forget(requests, request.rank);
  requests.push_back(request);
}

}  // namespace

RegroupRound::RegroupRound(int workers, int min_workers, std::vector<int> members)
    : workers_(workers), min_workers_(min_workers), members_(std::move(members)) {
  if (!members_.empty()) return;
  for (int rank = 0; rank < workers; ++rank) members_.push_back(rank);
}

bool RegroupRound::IsMember(int rank) const {
  return std::binary_search(members_.begin(), members_.end(), rank);
}

int RegroupRound::AnswerEpoch(int rank) const {
  return waiting_.contains(rank) ? epoch_ + 2 : epoch_ + 1;
}

void RegroupRound::RemoveMember(int rank, std::int64_t recorded_step, RegroupStep& step) {
  std::erase(members_, rank);
  changed_ = true;
  step.events.push_back("worker " + std::to_string(rank) + " lost at step " +
                        std::to_string(recorded_step) + ", " + std::to_string(members_.size()) +
                        " carry on");
}

RegroupStep RegroupRound::Lost(int rank, std::int64_t recorded_step) {
  RegroupStep step;
  if (IsMember(rank)) {
    RemoveMember(rank, recorded_step, step);
    if (static_cast<int>(members_.size()) < min_workers_) {
      step.failure = "only " + std::to_string(members_.size()) + " of " + std::to_string(workers_) +
                     " workers remain (cluster.min_workers = " + std::to_string(min_workers_) + ")";
      return step;
    }
    if (!open_) {
      // The survivors' rings fail with its links: each of them asks.
      Open(false, step);
      return step;
    }
  } else if (joiners_.contains(rank)) {
    joiners_.erase(rank);
  } else {
    if (waiting_.erase(rank) != 0) Forget(early_, rank);
    return step;
  }
  expected_.erase(rank);
  Forget(asked_, rank);
  CompleteIfAllAsked(step);
  return step;
}

RegroupStep RegroupRound::Joined(int rank) {
  RegroupStep step;
  waiting_.insert(rank);
  if (!open_) {
    changed_ = true;
    Open(true, step);
  }
  return step;
}

RegroupStep RegroupRound::Asked(const RegroupRequest& request) {
  RegroupStep step;
  if (!open_ && IsMember(request.rank)) Open(false, step);
  if (open_ && expected_.contains(request.rank)) {
    Keep(asked_, request);
    CompleteIfAllAsked(step);
  } else if (waiting_.contains(request.rank)) {
    Keep(early_, request);
  } else {
    step.refused = "worker " + std::to_string(request.rank) +
                   " is not a member of the job's membership " + std::to_string(epoch_) +
                   " nor an admitted replacement";
  }
  return step;
}

RegroupStep RegroupRound::DeadlinePassed(std::int64_t recorded_step) {
  RegroupStep step;
  if (!open_) return step;
  for (int rank : expected_) {
    const bool asked = std::any_of(asked_.begin(), asked_.end(),
                                   [rank](const RegroupRequest& r) { return r.rank == rank; });
    if (asked) continue;
    step.kill.push_back(rank);
    if (IsMember(rank)) {
      RemoveMember(rank, recorded_step, step);
    } else {
      joiners_.erase(rank);
    }
  }
  Complete(step);
  return step;
}

void RegroupRound::Open(bool notify, RegroupStep& step) {
  open_ = true;
  expected_ = std::set<int>(members_.begin(), members_.end());
  expected_.insert(waiting_.begin(), waiting_.end());
  joiners_ = std::move(waiting_);
  waiting_.clear();
  asked_ = std::move(early_);
  early_.clear();
  if (notify) step.notify = members_;
  step.round_began = true;
}

void RegroupRound::CompleteIfAllAsked(RegroupStep& step) {
  if (open_ && asked_.size() == expected_.size()) Complete(step);
}

void RegroupRound::Complete(RegroupStep& step) {
  open_ = false;
  const RegroupRequest* leader = nullptr;
  std::vector<int> asked;
  for (const RegroupRequest& r : asked_) {
    asked.push_back(r.rank);
    if (joiners_.contains(r.rank) || r.completed_step < 0) continue;
    if (leader == nullptr || r.completed_step < leader->completed_step ||
        (r.completed_step == leader->completed_step && r.rank < leader->rank)) {
      leader = &r;
    }
  }
  std::sort(asked.begin(), asked.end());
  const std::string min = " (cluster.min_workers = " + std::to_string(min_workers_) + ")";
  if (!changed_) {
    step.failure = "regroup: the workers' ring failed with no worker lost or joined";
  } else if (static_cast<int>(asked.size()) < min_workers_) {
    step.failure = "regroup: only " + std::to_string(asked.size()) + " of " +
                   std::to_string(workers_) + " workers asked within cluster.timeout_seconds" + min;
  } else if (leader == nullptr) {
    step.failure = "regroup: no worker that holds the job's state asked, only replacements";
  }
  if (step.failure) return;
  RegroupAnswer answer{epoch_ + 1, asked, leader->rank, leader->completed_step};
  for (int rank : asked) {
    if (!joiners_.contains(rank)) continue;
    step.events.push_back("worker " + std::to_string(rank) + " joined at step " +
                          std::to_string(answer.step) + ": " + std::to_string(asked.size()) +
                          " of " + std::to_string(workers_));
  }
  epoch_ = answer.membership;
  members_ = std::move(asked);
  changed_ = false;
  asked_.clear();
  expected_.clear();
  joiners_.clear();
  step.answer = std::move(answer);
  // Replacements admitted meanwhile join at the next round, which begins now.
  if (!waiting_.empty()) {
    changed_ = true;
    Open(true, step);
  }
}

}  // namespace dtrain::server
