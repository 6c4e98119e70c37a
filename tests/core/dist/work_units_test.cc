// WorkUnits, Sandblaster's pass bookkeeping, in simulated passes: every unit's gradient reaches
// the shards exactly once whatever the timing, losses and backups; fast workers do more; backups
// keep a stalled worker from holding the pass, and without them it does.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "core/dist/work_units.h"

namespace dtrain::dist {
namespace work_units_test {

struct SimWorker {
  double seconds_per_unit = 1.0;
  double busy_until = 0.0;  // when its current unit finishes (infinity: stalled)
  int unit = -1;
  bool waiting = true;
  std::vector<int> accumulator;  // units whose gradient it has added, not yet pushed
  double lose_at = std::numeric_limits<double>::infinity();
  bool lost = false;
};

struct SimResult {
  bool complete = false;
  double seconds = 0.0;
  std::map<int, int> pushed;  // unit -> times its gradient reached the shards
};

// Runs one pass to completion (or until nothing can happen), pushing instantly.
SimResult Simulate(WorkUnits& pass, std::vector<SimWorker>& workers) {
  SimResult r;
  double now = 0.0;
  auto push = [&](int w) {
    for (int unit : workers[w].accumulator) r.pushed[unit]++;
    workers[w].accumulator.clear();
    pass.Pushed(w);
  };
  auto give_orders = [&] {
    for (int w = 0; w < static_cast<int>(workers.size()); ++w) {
      SimWorker& k = workers[w];
      if (!k.waiting || k.lost) continue;
      const Order o = pass.Next(w);
      if (o.kind == OrderKind::kWait) continue;
      if (o.kind == OrderKind::kFlush || o.flush_first) push(w);
      if (o.kind == OrderKind::kCompute) {
        k.waiting = false;
        k.unit = o.unit;
        k.busy_until = now + k.seconds_per_unit;
      }
    }
  };
  give_orders();
  for (int events = 0; events < 100000 && !pass.Complete(); ++events) {
    int next = -1;
    double when = std::numeric_limits<double>::infinity();
    for (int w = 0; w < static_cast<int>(workers.size()); ++w) {
      const SimWorker& k = workers[w];
      if (k.lost) continue;
      const double t = std::min(k.waiting ? std::numeric_limits<double>::infinity() : k.busy_until,
                                k.lose_at);
      if (t < when) when = t, next = w;
    }
    if (next < 0) break;  // nothing will ever happen
    now = when;
    SimWorker& k = workers[next];
    if (k.lose_at <= now) {
      k.lost = true;
      BOOST_REQUIRE(pass.Lost(next));  // pushes are instant here, never in flight
      k.accumulator.clear();
    } else {
      const Verdict v = pass.Done(next, k.unit);
      if (v.drop_accumulator) k.accumulator.clear();
      if (v.accepted) k.accumulator.push_back(k.unit);
      k.waiting = true;
      k.unit = -1;
    }
    give_orders();
  }
  r.complete = pass.Complete();
  r.seconds = now;
  return r;
}

void CheckEachUnitOnce(const SimResult& r, int units) {
  BOOST_REQUIRE(r.complete);
  BOOST_REQUIRE(static_cast<int>(r.pushed.size()) == units);
  for (const auto& [unit, times] : r.pushed) BOOST_TEST(times == 1, "unit " << unit);
}

BOOST_AUTO_TEST_SUITE(work_units)

BOOST_AUTO_TEST_CASE(fast_workers_take_more_units) {
  WorkUnits pass(40, 2, 1.0);
  std::vector<SimWorker> workers(2);
  workers[0].seconds_per_unit = 1.0;
  workers[1].seconds_per_unit = 3.0;
  const SimResult r = Simulate(pass, workers);
  CheckEachUnitOnce(r, 40);
  BOOST_TEST(pass.accepted()[0] == 30);
  BOOST_TEST(pass.accepted()[1] == 10);
  BOOST_TEST(r.seconds <= 31.0);  // about 40 / (1 + 1/3) units of time
}

BOOST_AUTO_TEST_CASE(backups_finish_a_pass_a_stalled_worker_would_hold) {
  for (const double backup_after : {1.0, 0.8, 0.0}) {
    BOOST_TEST_CONTEXT("backup_after " << backup_after) {
      WorkUnits pass(30, 3, backup_after);
      std::vector<SimWorker> workers(3);
      workers[2].seconds_per_unit = 1000.0;  // as good as stopped
      const SimResult r = Simulate(pass, workers);
      CheckEachUnitOnce(r, 30);
      if (backup_after == 1.0) {
        BOOST_TEST(r.seconds >= 1000.0);  // the pass waits for it
        BOOST_TEST(pass.backups_issued() == 0);
      } else {
        BOOST_TEST(r.seconds < 20.0);
        BOOST_TEST(pass.backups_issued() >= 1);
        BOOST_TEST(pass.backups_won() >= 1);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_slow_workers_held_units_are_revoked_and_counted_once) {
  // Worker 2 is fast for its first units, then stalls holding them.
  std::vector<SimWorker> stalled(3);
  stalled[2].seconds_per_unit = 0.5;
  WorkUnits third(24, 3, 0.5);
  // Its third unit never ends: it holds two accepted units meanwhile.
  for (int w = 0; w < 3; ++w) {
    const Order o = third.Next(w);
    BOOST_REQUIRE(o.kind == OrderKind::kCompute);
    stalled[w].waiting = false;
    stalled[w].unit = o.unit;
    stalled[w].busy_until = stalled[w].seconds_per_unit;
  }
  // Worker 2 finishes two units quickly, then stalls on its third.
  for (int i = 0; i < 2; ++i) {
    const Verdict v = third.Done(2, stalled[2].unit);
    BOOST_REQUIRE(v.accepted);
    stalled[2].accumulator.push_back(stalled[2].unit);
    const Order o = third.Next(2);
    BOOST_REQUIRE(o.kind == OrderKind::kCompute);
    stalled[2].unit = o.unit;
  }
  stalled[2].busy_until = 1e9;
  stalled[0].busy_until = 1.0;
  stalled[1].busy_until = 1.0;
  const SimResult r = Simulate(third, stalled);
  CheckEachUnitOnce(r, 24);
  BOOST_TEST(r.seconds < 1e6);
  BOOST_TEST(third.revoked() == 2);
  // When it wakes at last, its result is refused and its accumulator dropped.
  const Verdict late = third.Done(2, stalled[2].unit);
  BOOST_TEST(!late.accepted);
  BOOST_TEST(late.drop_accumulator);
}

BOOST_AUTO_TEST_CASE(a_lost_workers_units_are_done_by_the_others) {
  WorkUnits pass(20, 3, 0.9);
  std::vector<SimWorker> workers(3);
  workers[1].lose_at = 4.5;  // mid-unit, holding four accepted units
  const SimResult r = Simulate(pass, workers);
  CheckEachUnitOnce(r, 20);
  BOOST_TEST(pass.IsLost(1));
  BOOST_TEST(pass.revoked() >= 1);
}

BOOST_AUTO_TEST_CASE(a_worker_lost_while_pushing_means_the_pass_starts_over) {
  WorkUnits pass(4, 2, 1.0);
  for (int w = 0; w < 2; ++w) BOOST_REQUIRE(pass.Next(w).kind == OrderKind::kCompute);
  BOOST_REQUIRE(pass.Done(0, 0).accepted);
  const Order last = pass.Next(0);  // unit 2; then unit 3 is the last pending
  BOOST_REQUIRE(last.kind == OrderKind::kCompute);
  BOOST_TEST(!last.flush_first);
  BOOST_REQUIRE(pass.Done(1, 1).accepted);
  const Order o = pass.Next(1);  // the last pending unit: push first
  BOOST_TEST(o.flush_first);
  BOOST_TEST(!pass.Lost(1));  // its push may have reached some shards only
}

BOOST_AUTO_TEST_CASE(random_timing_losses_and_stalls_count_every_unit_once) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> speed(0.2, 3.0), chance(0.0, 1.0);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 5);
    const int units = n + static_cast<int>(rng() % 40);
    const double backup_after = chance(rng) < 0.2 ? 1.0 : chance(rng);
    BOOST_TEST_CONTEXT("trial " << trial << ": " << n << " workers, " << units
                                << " units, backup_after " << backup_after) {
      WorkUnits pass(units, n, backup_after);
      std::vector<SimWorker> workers(static_cast<std::size_t>(n));
      for (SimWorker& w : workers) {
        w.seconds_per_unit = speed(rng);
        if (chance(rng) < 0.1) w.seconds_per_unit = 500.0;               // stalled
        if (chance(rng) < 0.15) w.lose_at = speed(rng) * units / 4;      // dies
      }
      workers[0].lose_at = std::numeric_limits<double>::infinity();  // someone survives
      workers[0].seconds_per_unit = std::min(workers[0].seconds_per_unit, 3.0);
      const SimResult r = Simulate(pass, workers);
      CheckEachUnitOnce(r, units);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace work_units_test
}  // namespace dtrain::dist
