#include "daemon/server/regroup_round.h"

#include <algorithm>
#include <sstream>
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

RegroupRound::RegroupRound(int workers, int min_workers, std::vector<int> members, int max_workers,
                           bool newest_leads)
    : workers_(workers),
      min_workers_(min_workers),
      newest_leads_(newest_leads),
      of_workers_(" of " + std::to_string(workers) +
                  (max_workers > workers ? ".." + std::to_string(max_workers) : "")),
      members_(std::move(members)) {
  if (!members_.empty()) return;
  for (int rank = 0; rank < workers; ++rank) members_.push_back(rank);
}

bool RegroupRound::IsMember(int rank) const {
  return std::binary_search(members_.begin(), members_.end(), rank);
}

int RegroupRound::AnswerEpoch(int rank) const {
  return waiting_.contains(rank) ? epoch_ + 2 : epoch_ + 1;
}

std::optional<std::string> RegroupRound::Stranded() const {
  const std::size_t coming = joiners_.size() + waiting_.size() + replacing_.size();
  if (!Short() ||
      (!members_.empty() && static_cast<int>(members_.size() + coming) >= min_workers_)) {
    return std::nullopt;
  }
  return "only " + std::to_string(members_.size()) + " of " + std::to_string(workers_) +
         " workers remain (cluster.min_workers = " + std::to_string(min_workers_) + ")";
}

void RegroupRound::RemoveMember(int rank) {
  std::erase(members_, rank);
  changed_ = true;
}

std::string RegroupRound::LossEvent(int rank, std::int64_t recorded_step, bool waits) const {
  const std::size_t left = members_.size();
  std::string event = "worker " + std::to_string(rank) + " lost at step " +
                      std::to_string(recorded_step) + ", " + std::to_string(left);
  if (!waits) return event + " carry on";
  return event + (left == 1 ? " waits" : " wait") +
         " for replacements (cluster.min_workers = " + std::to_string(min_workers_) + ")";
}

RegroupStep RegroupRound::Lost(int rank, std::int64_t recorded_step, bool replaced) {
  RegroupStep step;
  const bool member = IsMember(rank);
  if (member) {
    RemoveMember(rank);
  } else if (waiting_.erase(rank) != 0) {
    Forget(early_, rank);
  } else if (joiners_.erase(rank) == 0 && !replacing_.contains(rank)) {
    return step;  // never started, or gone already
  }
  if (replaced) {
    replacing_.insert(rank);
  } else {
    replacing_.erase(rank);
  }
  step.failure = Stranded();
  if (member) step.events.push_back(LossEvent(rank, recorded_step, Short() && !step.failure));
  if (step.failure) return step;
  if (member && !open_) {
    Open(step);
  } else {
    expected_.erase(rank);
    Forget(asked_, rank);
  }
  if (Short()) TakeInWaiting();
  CompleteIfAllAsked(step);
  return step;
}

RegroupStep RegroupRound::NotReplaced(int rank) {
  RegroupStep step;
  replacing_.erase(rank);
  if (std::optional<std::string> stranded = Stranded()) {
    step.failure = "worker " + std::to_string(rank) + " is not replaced: " + *stranded;
  }
  return step;
}

RegroupStep RegroupRound::Joined(int rank) {
  RegroupStep step;
  replacing_.erase(rank);
  if (open_ && Short()) {
    joiners_.insert(rank);
    expected_.insert(rank);
    return step;
  }
  waiting_.insert(rank);
  if (!open_) {
    changed_ = true;
    Open(step);
  }
  return step;
}

RegroupStep RegroupRound::Asked(const RegroupRequest& request) {
  RegroupStep step;
  if (!open_ && IsMember(request.rank)) Open(step, request.rank);
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

RegroupStep RegroupRound::DeadlinePassed(std::int64_t recorded_step, double waited_seconds) {
  RegroupStep step;
  if (!open_) return step;
  const bool waited = Short();
  for (int rank : expected_) {
    const bool asked = std::any_of(asked_.begin(), asked_.end(),
                                   [rank](const RegroupRequest& r) { return r.rank == rank; });
    if (asked) continue;
    step.kill.push_back(rank);
    if (IsMember(rank)) {
      RemoveMember(rank);
      step.events.push_back(LossEvent(rank, recorded_step, false));
    } else {
      joiners_.erase(rank);
    }
  }
  if (waited && static_cast<int>(asked_.size()) < min_workers_) {
    open_ = false;
    std::ostringstream why;
    why << "only " << asked_.size() << " of " << workers_
        << " workers remain (cluster.min_workers = " << min_workers_ << "); waited "
        << waited_seconds << " s for replacements";
    step.failure = why.str();
    return step;
  }
  Complete(step);
  return step;
}

void RegroupRound::Open(RegroupStep& step, int asker) {
  open_ = true;
  expected_ = std::set<int>(members_.begin(), members_.end());
  expected_.insert(waiting_.begin(), waiting_.end());
  joiners_ = std::move(waiting_);
  waiting_.clear();
  asked_ = std::move(early_);
  early_.clear();
  for (int rank : members_) {
    if (rank != asker) step.notify.push_back(rank);
  }
  step.round_began = true;
}

void RegroupRound::TakeInWaiting() {
  took_early_ = took_early_ || !early_.empty();
  joiners_.insert(waiting_.begin(), waiting_.end());
  expected_.insert(waiting_.begin(), waiting_.end());
  waiting_.clear();
  for (const RegroupRequest& request : early_) Keep(asked_, request);
  early_.clear();
}

void RegroupRound::CompleteIfAllAsked(RegroupStep& step) {
  if (open_ && asked_.size() == expected_.size() &&
      static_cast<int>(asked_.size()) >= min_workers_) {
    Complete(step);
  }
}

void RegroupRound::Complete(RegroupStep& step) {
  open_ = false;
  const RegroupRequest* leader = nullptr;
  std::vector<int> asked;
  for (const RegroupRequest& r : asked_) {
    asked.push_back(r.rank);
    if (joiners_.contains(r.rank) || r.completed_step < 0) continue;
    if (leader == nullptr ||
        (newest_leads_ ? r.completed_step > leader->completed_step
                       : r.completed_step < leader->completed_step) ||
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
                          of_workers_);
  }
  epoch_ = answer.membership;
  members_ = std::move(asked);
  changed_ = false;
  asked_.clear();
  expected_.clear();
  joiners_.clear();
  step.answer = std::move(answer);
  step.answers_the_next_round_too = std::exchange(took_early_, false);
  // Replacements admitted meanwhile join at the next round, which begins now.
  if (!waiting_.empty()) {
    changed_ = true;
    Open(step);
  }
}

}  // namespace dtrain::server
