#include "core/dist/work_units.h"

#include <algorithm>
#include <cassert>

namespace dtrain::dist {

WorkUnits::WorkUnits(int units, int workers, double backup_after)
    : units_(units),
      backup_after_(backup_after),
      unit_(static_cast<std::size_t>(units)),
      workers_(static_cast<std::size_t>(workers)),
      accepted_(static_cast<std::size_t>(workers), 0) {
  for (int u = 0; u < units; ++u) pending_.insert(u);
}

double WorkUnits::DoneFraction() const {
  return static_cast<double>(done_) / static_cast<double>(units_);
}

Order WorkUnits::Compute(int worker, int unit, bool backup) {
  Worker& w = workers_[static_cast<std::size_t>(worker)];
  Unit& u = unit_[static_cast<std::size_t>(unit)];
  if (u.runners.empty()) u.started = ++orders_;
  u.state = State::kRunning;
  u.runners.push_back(worker);
  w.unit = unit;
  w.backup = backup;
  return {OrderKind::kCompute, unit, backup, false};
}

void WorkUnits::StartPush(Worker& worker) {
  worker.pushing.insert(worker.pushing.end(), worker.held.begin(), worker.held.end());
  worker.held.clear();
}

Order WorkUnits::Next(int worker) {
  Worker& w = workers_[static_cast<std::size_t>(worker)];
  assert(!w.lost && w.unit == -1);
  if (!pending_.empty()) {
    const int unit = *pending_.begin();
    pending_.erase(pending_.begin());
    Order order = Compute(worker, unit, false);
    // Taking one of the last units: push first, so that a worker turning slow now holds nothing.
    if (!w.held.empty() && pending_.empty()) {
      order.flush_first = true;
      StartPush(w);
    }
    return order;
  }
  if (!w.held.empty()) {
    StartPush(w);
    return {OrderKind::kFlush};
  }
  if (backup_after_ < 1.0 && DoneFraction() >= backup_after_) {
    if (const int unit = BackupCandidate(worker); unit >= 0) {
      ++backups_issued_;
      return Compute(worker, unit, true);
    }
    if (RevokeSlowWorker(worker)) return Next(worker);
  }
  return {OrderKind::kWait};
}

int WorkUnits::BackupCandidate(int worker) const {
  int best = -1;
  for (int unit = 0; unit < units_; ++unit) {
    const Unit& u = unit_[static_cast<std::size_t>(unit)];
    if (u.state != State::kRunning || u.runners.size() >= 2 ||
        std::find(u.runners.begin(), u.runners.end(), worker) != u.runners.end()) {
      continue;
    }
    if (best < 0 || u.started < unit_[static_cast<std::size_t>(best)].started) best = unit;
  }
  return best;
}

bool WorkUnits::RevokeSlowWorker(int worker) {
  for (std::size_t v = 0; v < workers_.size(); ++v) {
    Worker& w = workers_[v];
    if (static_cast<int>(v) == worker || w.lost || w.unit < 0 || w.held.empty()) continue;
    const Unit& running = unit_[static_cast<std::size_t>(w.unit)];
    if (running.state == State::kRunning && running.runners.size() < 2) continue;  // not behind
    for (int unit : w.held) MakePending(unit);
    revoked_ += static_cast<int>(w.held.size());
    w.held.clear();
    w.revoked = true;
    return true;
  }
  return false;
}

void WorkUnits::MakePending(int unit) {
  Unit& u = unit_[static_cast<std::size_t>(unit)];
  if (u.state == State::kHeld) --done_;
  u.state = State::kPending;
  u.runners.clear();
  pending_.insert(unit);
}

Verdict WorkUnits::Done(int worker, int unit) {
  Worker& w = workers_[static_cast<std::size_t>(worker)];
  assert(!w.lost && w.unit == unit);
  Unit& u = unit_[static_cast<std::size_t>(unit)];
  std::erase(u.runners, worker);
  w.unit = -1;
  Verdict verdict;
  verdict.drop_accumulator = w.revoked;
  w.revoked = false;
  if (u.state == State::kHeld || u.state == State::kPushed) return verdict;  // a copy won first
  // Running (perhaps by other copies), or pending again (the copy that won was revoked): the
  // result is good either way.
  pending_.erase(unit);
  u.state = State::kHeld;
  u.runners.clear();  // other copies still running will be refused
  ++done_;
  w.held.push_back(unit);
  ++accepted_[static_cast<std::size_t>(worker)];
  if (w.backup) ++backups_won_;
  verdict.accepted = true;
  return verdict;
}

void WorkUnits::Pushed(int worker) {
  Worker& w = workers_[static_cast<std::size_t>(worker)];
  for (int unit : w.pushing) unit_[static_cast<std::size_t>(unit)].state = State::kPushed;
  pushed_ += static_cast<int>(w.pushing.size());
  w.pushing.clear();
}

bool WorkUnits::Lost(int worker) {
  Worker& w = workers_[static_cast<std::size_t>(worker)];
  if (w.lost) return true;
  w.lost = true;
  if (w.unit >= 0) {
    Unit& u = unit_[static_cast<std::size_t>(w.unit)];
    std::erase(u.runners, worker);
    if (u.state == State::kRunning && u.runners.empty()) MakePending(w.unit);
    w.unit = -1;
  }
  for (int unit : w.held) MakePending(unit);
  revoked_ += static_cast<int>(w.held.size());
  w.held.clear();
  return w.pushing.empty();
}

}  // namespace dtrain::dist
