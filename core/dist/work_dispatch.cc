#include "core/dist/work_dispatch.h"

#include <algorithm>

#include "core/dist/work_units.h"

namespace dtrain::dist {
WorkDispatcher::WorkDispatcher(std::vector<Link*> workers, DispatchOptions options)
    : links_(std::move(workers)), options_(options), workers_(links_.size()) {
  for (std::size_t w = 0; w < links_.size(); ++w) {
    readers_.emplace_back([this, w] { Read(static_cast<int>(w)); });
  }
}

WorkDispatcher::~WorkDispatcher() {
  for (Link* link : links_) link->Close();
  readers_.clear();
}

void WorkDispatcher::Read(int worker) {
  Link& link = *links_[static_cast<std::size_t>(worker)];
  while (true) {
    std::uint32_t tag = 0;
    Result<SbHeader> h = RecvAnySb(link, &tag, NoDeadline());
    Event e;
    e.worker = worker;
    if (h.ok()) {
      e.header = h.value();
    } else {
      e.lost = true;
      e.why = h.status().message();
    }
    const bool end = e.lost || e.header.kind == SbKind::kGoodbye;
    {
      std::lock_guard lock(mu_);
      events_.push_back(std::move(e));
    }
    arrived_.notify_one();
    if (end) return;
  }
}

WorkDispatcher::Event WorkDispatcher::NextEvent() {
  std::unique_lock lock(mu_);
  arrived_.wait(lock, [&] { return !events_.empty(); });
  Event e = std::move(events_.front());
  events_.pop_front();
  return e;
}

std::pair<std::uint64_t, std::uint64_t> WorkDispatcher::Rows(int unit) const {
  const auto u = static_cast<std::uint64_t>(unit), n = static_cast<std::uint64_t>(options_.units);
  return {u * options_.rows / n, (u + 1) * options_.rows / n};
}

void WorkDispatcher::MarkLost(int worker, const std::string& why) {
  WorkerState& w = workers_[static_cast<std::size_t>(worker)];
  if (w.lost) return;
  w.lost = true;
  w.waiting = false;
  links_[static_cast<std::size_t>(worker)]->Close();
  lost_reports_.push_back("worker rank " + std::to_string(worker) + ": " + why);
}

bool WorkDispatcher::Offer(WorkUnits& units, std::uint64_t pass, int worker) {
  WorkerState& w = workers_[static_cast<std::size_t>(worker)];
  if (!w.waiting || w.lost) return true;
  const Order order = units.Next(worker);
  if (order.kind == OrderKind::kWait) return true;
  SbHeader h{.kind = SbKind::kOrder};
  h.pass = pass;
  h.flags = w.verdict;
  if (order.kind == OrderKind::kFlush || order.flush_first) h.flags |= kSbFlush;
  if (order.kind == OrderKind::kCompute) {
    h.flags |= kSbCompute | (order.backup ? kSbBackup : 0u);
    h.unit = static_cast<std::uint32_t>(order.unit);
    std::tie(h.first, h.last) = Rows(order.unit);
  }
  w.verdict = 0;
  w.waiting = false;
  Status sent = SendSb(*links_[static_cast<std::size_t>(worker)], h, {},
                       Clock::now() + options_.timeout);
  if (sent.ok()) return true;
  MarkLost(worker, sent.message());
  return units.Lost(worker);  // false if the order told it to push: the pass starts over
}

Result<PassTotals> WorkDispatcher::RunPass(std::uint64_t pass) {
  WorkUnits units(options_.units, static_cast<int>(links_.size()), options_.backup_after);
  PassTotals totals;
  for (std::size_t w = 0; w < workers_.size(); ++w) {
    if (workers_[w].lost || workers_[w].gone) units.Lost(static_cast<int>(w));
    // Whatever a worker accumulated belongs to an earlier pass (all pushed, revoked, or of a pass
    // that started over): its first order of this pass clears it.
    workers_[w].verdict = kSbDrop;
  }
  auto offer_all = [&] {
    for (std::size_t w = 0; w < workers_.size(); ++w) {
      if (!Offer(units, pass, static_cast<int>(w))) totals.restart = true;
    }
  };
  offer_all();
  while (!units.Complete() && !totals.restart) {
    if (live_workers() == 0) {
      return Status::Error("every worker is lost; the last: " +
                           (lost_reports_.empty() ? std::string("none") : lost_reports_.back()));
    }
    const Event e = NextEvent();
    WorkerState& w = workers_[static_cast<std::size_t>(e.worker)];
    if (w.lost) continue;
    const SbHeader& h = e.header;
    if (e.lost || h.kind == SbKind::kGoodbye) {
      MarkLost(e.worker, e.lost ? e.why : "it said goodbye in the middle of the run");
      if (!units.Lost(e.worker)) totals.restart = true;
    } else if (h.kind == SbKind::kReady) {
      w.waiting = true;
    } else if (h.kind == SbKind::kDone) {
      w.waiting = true;
      if (h.pass != pass || (h.flags & kSbStale) != 0) {
        w.verdict = kSbDrop;  // a unit of a finished pass: its accumulator is stale too
      } else {
        const Verdict v = units.Done(e.worker, static_cast<int>(h.unit));
        w.verdict = (v.accepted ? kSbAccepted : 0u) | (v.drop_accumulator ? kSbDrop : 0u);
      }
    } else if (h.kind == SbKind::kPushed) {
      if (h.pass == pass) {
        units.Pushed(e.worker);
        totals.loss_sum += h.value;
        totals.correct += static_cast<std::int64_t>(h.count);
      }  // else a push into a pass begun again: the shards did not add it
      if ((h.flags & kSbAwaitingOrder) != 0) w.waiting = true;
    } else {
      MarkLost(e.worker, "it sent a " + SbKindName(h.kind) + " message out of turn");
      if (!units.Lost(e.worker)) totals.restart = true;
    }
    offer_all();
  }
  totals.units_per_worker = units.accepted();
  totals.backups_issued = units.backups_issued();
  totals.backups_won = units.backups_won();
  totals.revoked = units.revoked();
  return totals;
}

Status WorkDispatcher::Stop() {
  const Deadline deadline = Clock::now() + options_.timeout;
  auto stop = [&](int worker) {
    WorkerState& w = workers_[static_cast<std::size_t>(worker)];
    SbHeader h{.kind = SbKind::kOrder};
    h.flags = kSbStop;
    w.waiting = false;
    if (!SendSb(*links_[static_cast<std::size_t>(worker)], h, {}, deadline).ok()) {
      MarkLost(worker, "it did not take the order to stop");
    }
  };
  int owed = 0;  // workers still to say goodbye
  for (std::size_t w = 0; w < workers_.size(); ++w) {
    if (workers_[w].lost || workers_[w].gone) continue;
    ++owed;
    if (workers_[w].waiting) stop(static_cast<int>(w));
  }
  while (owed > 0) {
    std::unique_lock lock(mu_);
    if (!arrived_.wait_until(lock, deadline, [&] { return !events_.empty(); })) break;
    const Event e = std::move(events_.front());
    events_.pop_front();
    lock.unlock();
    WorkerState& w = workers_[static_cast<std::size_t>(e.worker)];
    if (w.lost || w.gone) continue;
    if (e.lost) {
      MarkLost(e.worker, e.why);
      --owed;
    } else if (e.header.kind == SbKind::kGoodbye) {
      w.gone = true;
      --owed;
    } else if (e.header.kind == SbKind::kDone || e.header.kind == SbKind::kReady ||
               (e.header.kind == SbKind::kPushed && (e.header.flags & kSbAwaitingOrder) != 0)) {
      stop(e.worker);  // it was busy with a unit nobody needs now, or is waiting for an order
    }
  }
  if (owed == 0) return Status::Ok();
  std::string silent;
  for (std::size_t w = 0; w < workers_.size(); ++w) {
    if (workers_[w].lost || workers_[w].gone) continue;
    silent += (silent.empty() ? "" : ", ") + std::to_string(w);
    MarkLost(static_cast<int>(w), "it did not say goodbye at the end of the run");
  }
  return Status::Error("worker ranks " + silent + " did not say goodbye at the end of the run");
}

std::vector<std::string> WorkDispatcher::TakeLost() {
  std::vector<std::string> out;
  out.swap(lost_reports_);
  return out;
}

int WorkDispatcher::live_workers() const {
  return static_cast<int>(std::count_if(workers_.begin(), workers_.end(),
                                        [](const WorkerState& w) { return !w.lost && !w.gone; }));
}

}  // namespace dtrain::dist
