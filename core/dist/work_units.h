// WorkUnits: the bookkeeping of one Sandblaster pass (Dean et al. 2012, section 4.2) — which
// work unit each worker computes, which results are kept, when backups go out — as a pure state
// machine that the coordinator drives with what its workers report.
//
//   WorkUnits pass(/*units=*/40, /*workers=*/4, /*backup_after=*/0.8);
//   Order o = pass.Next(w);                       // for every worker waiting for an order
//   ... worker w computes o.unit ...
//   Verdict v = pass.Done(w, o.unit);             // keep its result? drop its accumulator?
//   pass.Pushed(w);                               // w pushed its accumulator to the shards
//   pass.Lost(w);                                 // w died or stalled
//   if (pass.Complete()) ...                      // every unit's gradient is on the shards
//
// A pass's rows are cut into `units` work units, many more than workers, handed to workers one at
// a time as they become free, so fast workers do more. A worker adds each accepted unit's
// gradient to its accumulator and pushes the accumulator to the shards only when told (kFlush, or
// flush_first before its next unit), so most units cost no traffic of their own. A unit is in
// turn pending (to compute), running (its first copy and any backups), held (accepted; its
// gradient sits in the accumulator of the worker that computed it) and pushed (on the shards).
// The pass is complete when every unit is pushed.
//
// Backups: once `backup_after` of the units are held or pushed and none is pending, a worker
// with nothing to do gets a copy of a unit another worker still runs (the least copied, the
// oldest first); the first result to come is kept, the others are refused. A worker whose unit
// has been backed up (or done elsewhere) may also have its held units revoked: they are pending
// again, for the free workers, and its next verdict tells it to drop its accumulator — which then
// holds only revoked units, so no unit's gradient is ever counted twice. A lost worker's running
// and held units are pending again the same way. Workers flush before taking the last pending
// units, so a worker that turns slow near the end usually holds nothing.
//
// Not thread-safe: one thread (the coordinator's).
#pragma once

#include <cstdint>
#include <set>
#include <vector>

namespace dtrain::dist {

enum class OrderKind {
  kCompute,  // compute `unit` (after pushing the accumulator, if flush_first)
  kFlush,    // push the accumulator, then wait for the next order
  kWait,     // nothing to do now: wait for the next order
};

struct Order {
  OrderKind kind = OrderKind::kWait;
  int unit = -1;
  bool backup = false;       // another worker runs this unit too
  bool flush_first = false;  // push the accumulator before computing
};

struct Verdict {
  bool accepted = false;          // add the unit's gradient to the accumulator (after any drop)
  bool drop_accumulator = false;  // the accumulator's units were revoked: zero it first
};

class WorkUnits {
 public:
  // units >= 1, workers >= 1, backup_after in [0, 1] (1: no backups).
  WorkUnits(int units, int workers, double backup_after);

  // The next order for `worker`, which is waiting for one (it just reported, pushed, or joined).
  Order Next(int worker);
  // `worker` finished `unit`, the unit its last kCompute order named.
  Verdict Done(int worker, int unit);
  // `worker` pushed its accumulator: its held units are on the shards.
  void Pushed(int worker);
  // `worker` is gone (died, stalled): what it ran or held is pending again; it gets no orders.
  // False when it was pushing (kFlush or flush_first, not yet Pushed): some shards may have added
  // its accumulator and others not, so the pass must start over.
  bool Lost(int worker);

  bool Complete() const { return pushed_ == units_; }
  int units() const { return units_; }
  // Held or pushed units over all units.
  double DoneFraction() const;
  // Whether `worker` holds accepted units not yet pushed.
  bool Holds(int worker) const { return !workers_[static_cast<std::size_t>(worker)].held.empty(); }
  bool IsLost(int worker) const { return workers_[static_cast<std::size_t>(worker)].lost; }

  // Per worker: units whose result was accepted from it (revoked ones included).
  const std::vector<int>& accepted() const { return accepted_; }
  int backups_issued() const { return backups_issued_; }
  int backups_won() const { return backups_won_; }  // accepted results that came from a backup
  int revoked() const { return revoked_; }           // units taken back from slow or lost workers

 private:
  enum class State { kPending, kRunning, kHeld, kPushed };
  struct Unit {
    State state = State::kPending;
    std::vector<int> runners;  // workers computing it, first copy first
    std::uint64_t started = 0;  // when its first copy was handed out (order count)
  };
  struct Worker {
    int unit = -1;          // the unit it computes, -1 when idle
    bool backup = false;    // that unit was handed to it as a backup
    std::vector<int> held;  // accepted, not pushed
    std::vector<int> pushing;  // told to push, not yet Pushed
    bool revoked = false;   // its accumulator must be dropped at its next verdict
    bool lost = false;
  };

  Order Compute(int worker, int unit, bool backup);
  // A running unit for `worker` to back up, or -1.
  int BackupCandidate(int worker) const;
  // Revokes the held units of one busy worker whose unit is backed up or done elsewhere; false
  // if there is none.
  bool RevokeSlowWorker(int worker);
  void MakePending(int unit);
  // Its held units become the ones it pushes now.
  void StartPush(Worker& worker);

  const int units_;
  const double backup_after_;
  std::vector<Unit> unit_;
  std::vector<Worker> workers_;
  std::set<int> pending_;
  int done_ = 0;    // held or pushed
  int pushed_ = 0;
  std::uint64_t orders_ = 0;
  std::vector<int> accepted_;
  int backups_issued_ = 0;
  int backups_won_ = 0;
  int revoked_ = 0;
};

}  // namespace dtrain::dist
