// ASHA's decisions over metrics known in advance: the rungs, exactly which trial is promoted to
// which rung and when (trials run one after another, as `dtrain sweep run` runs them), that goal
// "min" inverts the order, that a NaN is never promoted ahead of a number, and, over many orders,
// the rule itself: a promoted trial ranked in the top floor(n / factor) of its rung when it was
// promoted, and the final top floor(n / factor) of every rung all went on. And the leaderboard's
// order (RanksBefore) and the reasons a trial's job shows.
#include "config/sweep_asha.h"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace dtrain::config {
namespace sweep_asha_test {

using Kind = AshaAction::Kind;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One line per action: "S3" (trial 3 started), "P0>2" (trial 0 promoted to rung 2).
std::string Label(const AshaAction& a) {
  switch (a.kind) {
    case Kind::kStart:
      return std::string("S").append(std::to_string(a.trial));
    case Kind::kPromote:
      return std::string("P")
          .append(std::to_string(a.trial))
          .append(">")
          .append(std::to_string(a.rung));
    case Kind::kWait:
      return "wait";
    case Kind::kDone:
      return "done";
  }
  return "?";
}

struct Sweep {
  std::vector<AshaTrial> trials;
  std::vector<std::string> trace;  // every action, the last "done"
};

// A sequential sweep (one trial trains at a time, each to its rung at once) where trial i's
// metric at rung k is metric(i, k). `check` sees each action with the trials as they stood.
Sweep Simulate(
    const AshaOptions& options, SweepGoal goal, std::int64_t max_trials,
    const std::function<double(std::int64_t, int)>& metric,
    const std::function<void(const AshaAction&, const std::vector<AshaTrial>&)>& check = nullptr) {
  Sweep s;
  for (int guard = 0; guard < 10'000; ++guard) {
    const AshaAction a = NextAshaAction(options, goal, max_trials, s.trials);
    if (check) check(a, s.trials);
    s.trace.push_back(Label(a));
    if (a.kind == Kind::kStart) {
      BOOST_REQUIRE_EQUAL(a.trial, static_cast<std::int64_t>(s.trials.size()));
      s.trials.push_back({{metric(a.trial, 0)}, false, false});
    } else if (a.kind == Kind::kPromote) {
      BOOST_REQUIRE_EQUAL(s.trials[a.trial].metrics.size(), static_cast<std::size_t>(a.rung));
      s.trials[a.trial].metrics.push_back(metric(a.trial, a.rung));
    } else {
      break;
    }
  }
  return s;
}

std::vector<std::size_t> TrialsPerRung(const Sweep& s, std::size_t rungs) {
  std::vector<std::size_t> count(rungs, 0);
  for (const AshaTrial& t : s.trials) {
    for (std::size_t k = 0; k < t.metrics.size(); ++k) ++count[k];
  }
  return count;
}

std::string Joined(const std::vector<std::string>& trace) {
  std::string text;
  for (const std::string& a : trace) text += (text.empty() ? "" : " ") + a;
  return text;
}

const AshaOptions kNine{1, 9, 3};  // rungs 1, 3, 9

BOOST_AUTO_TEST_SUITE(sweep_asha)

BOOST_AUTO_TEST_CASE(rungs_grow_by_the_factor_and_end_at_max_steps) {
  using V = std::vector<std::int64_t>;
  BOOST_TEST((AshaRungs({1, 9, 3}) == V{1, 3, 9}));
  BOOST_TEST((AshaRungs({100, 1000, 3}) == V{100, 300, 900, 1000}));
  BOOST_TEST((AshaRungs({2, 8, 2}) == V{2, 4, 8}));
  BOOST_TEST((AshaRungs({10, 20, 3}) == V{10, 20}));
  BOOST_TEST((AshaRungs({10, 11, 100}) == V{10, 11}));
}

// Earlier trials are better (goal max): the first of each three at rung 0 goes on, the best of
// rung 1 goes on to the last rung; 9 trials -> 3 at rung 1 -> 1 at rung 2.
BOOST_AUTO_TEST_CASE(the_top_third_of_each_rung_is_promoted_the_highest_rung_first) {
  const Sweep s = Simulate(kNine, SweepGoal::kMax, 9, [](std::int64_t i, int k) {
    return 100.0 - static_cast<double>(i) + k;
  });
  BOOST_TEST(Joined(s.trace) == "S0 S1 S2 P0>1 S3 S4 S5 P1>1 S6 S7 S8 P2>1 P0>2 done");
  BOOST_TEST((TrialsPerRung(s, 3) == std::vector<std::size_t>{9, 3, 1}));
}

BOOST_AUTO_TEST_CASE(a_promotion_carries_the_steps_of_its_rung) {
  std::vector<AshaTrial> trials = {
      {{0.5}, false, false}, {{0.2}, false, false}, {{0.9}, false, false}};
  const AshaOptions options{100, 1000, 3};
  BOOST_TEST((NextAshaAction(options, SweepGoal::kMax, 9, trials) ==
              AshaAction{Kind::kPromote, 2, 1, 300}));
  trials[2].metrics.push_back(0.95);
  BOOST_TEST(
      (NextAshaAction(options, SweepGoal::kMax, 9, trials) == AshaAction{Kind::kStart, 3, 0, 100}));
}

// Goal "min" ranks the other way: the same metrics promote the trials that "max" leaves, and a
// sweep over -metric under "max" takes exactly the same decisions. Later trials better: ASHA
// promotes what is best so far, so each new trial goes on (asynchronous promotion's worst order).
BOOST_AUTO_TEST_CASE(goal_min_inverts_the_ranking) {
  auto metric = [](std::int64_t i, int k) { return 100.0 - static_cast<double>(i) + k; };
  const Sweep min = Simulate(kNine, SweepGoal::kMin, 9, metric);
  BOOST_TEST(Joined(min.trace) ==
             "S0 S1 S2 P2>1 S3 P3>1 S4 P4>1 P4>2 S5 P5>1 P5>2 S6 P6>1 P6>2 S7 P7>1 P7>2 S8 P8>1 "
             "P8>2 done");
  const Sweep negated =
      Simulate(kNine, SweepGoal::kMax, 9, [&](std::int64_t i, int k) { return -metric(i, k); });
  BOOST_TEST(Joined(negated.trace) == Joined(min.trace));
  const Sweep max = Simulate(kNine, SweepGoal::kMax, 9, metric);
  BOOST_TEST(Joined(max.trace) != Joined(min.trace));
}

// A NaN (a diverged trial) ranks last and is never promoted, not even when no number beats it.
BOOST_AUTO_TEST_CASE(a_nan_is_never_promoted_ahead_of_a_number) {
  for (SweepGoal goal : {SweepGoal::kMax, SweepGoal::kMin}) {
    const Sweep s = Simulate(
        kNine, goal, 3, [](std::int64_t i, int) { return i == 0 ? kNaN : static_cast<double>(i); });
    BOOST_TEST(Joined(s.trace) ==
               (goal == SweepGoal::kMax ? "S0 S1 S2 P2>1 done" : "S0 S1 S2 P1>1 done"));
  }
  const Sweep none = Simulate(kNine, SweepGoal::kMax, 6, [](std::int64_t, int) { return kNaN; });
  BOOST_TEST(Joined(none.trace) == "S0 S1 S2 S3 S4 S5 done");
}

// Equal metrics rank by trial index, so the decisions never depend on anything but the input.
BOOST_AUTO_TEST_CASE(ties_go_to_the_earlier_trial) {
  const Sweep s = Simulate(kNine, SweepGoal::kMax, 6, [](std::int64_t, int) { return 0.5; });
  BOOST_TEST(Joined(s.trace) == "S0 S1 S2 P0>1 S3 S4 S5 P1>1 done");
}

// A running trial is not promoted again, an ended one (failed, stopped early) not at all, yet
// both keep their places in the rung's count; with every trial started and one running: wait.
BOOST_AUTO_TEST_CASE(running_and_ended_trials_are_not_promoted) {
  std::vector<AshaTrial> trials = {
      {{0.9}, false, true}, {{0.8}, false, false}, {{0.1}, false, false}};
  BOOST_TEST((NextAshaAction(kNine, SweepGoal::kMax, 3, trials).kind == Kind::kDone));
  trials[0] = {{0.9}, true, false};
  BOOST_TEST((NextAshaAction(kNine, SweepGoal::kMax, 3, trials).kind == Kind::kWait));
  BOOST_TEST(
      (NextAshaAction(kNine, SweepGoal::kMax, 4, trials) == AshaAction{Kind::kStart, 3, 0, 1}));
  trials[0].running = false;
  BOOST_TEST(
      (NextAshaAction(kNine, SweepGoal::kMax, 3, trials) == AshaAction{Kind::kPromote, 0, 1, 3}));
  // A trial at the last rung goes no further.
  const std::vector<AshaTrial> top = {{{0.9, 0.9, 0.9}, false, false}};
  BOOST_TEST((NextAshaAction(kNine, SweepGoal::kMax, 1, top).kind == Kind::kDone));
}

// The rule over many orders of 27 trials' metrics (rungs 1, 3, 9, 27): at each promotion the
// trial ranks in the top floor(n_k / 3) of the n_k trials then at rung k; at the end every rung's
// final top floor(n_k / 3) all reached rung k + 1, and the sweep trained every trial.
BOOST_AUTO_TEST_CASE(promotions_follow_the_rule_over_many_orders) {
  const AshaOptions options{1, 27, 3};
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      std::vector<double> base(27);
      std::uint64_t x = seed;
      for (double& v : base) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        v = static_cast<double>(x >> 40) / static_cast<double>(1ull << 24);
      }
      auto metric = [&](std::int64_t i, int k) { return base[i] + 0.01 * k * base[26 - i]; };
      auto ranks_in_top = [&](const std::vector<AshaTrial>& trials, std::int64_t t, int k) {
        std::size_t n = 0, better = 0;
        for (std::size_t j = 0; j < trials.size(); ++j) {
          if (trials[j].metrics.size() <= static_cast<std::size_t>(k)) continue;
          ++n;
          const double a = trials[j].metrics[k], b = trials[t].metrics[k];
          if (Better(SweepGoal::kMax, a, b) || (a == b && static_cast<std::int64_t>(j) < t))
            ++better;
        }
        return better < n / 3;
      };
      const Sweep s = Simulate(options, SweepGoal::kMax, 27, metric,
                               [&](const AshaAction& a, const std::vector<AshaTrial>& trials) {
                                 if (a.kind == Kind::kPromote) {
                                   BOOST_TEST(ranks_in_top(trials, a.trial, a.rung - 1));
                                 }
                               });
      BOOST_TEST(s.trace.back() == "done");
      BOOST_TEST(s.trials.size() == 27u);
      for (int k = 0; k < 3; ++k) {
        for (std::size_t t = 0; t < s.trials.size(); ++t) {
          if (s.trials[t].metrics.size() > static_cast<std::size_t>(k) &&
              ranks_in_top(s.trials, static_cast<std::int64_t>(t), k)) {
            BOOST_TEST(s.trials[t].metrics.size() > static_cast<std::size_t>(k + 1));
          }
        }
      }
      const std::vector<std::size_t> per_rung = TrialsPerRung(s, 4);
      BOOST_TEST(per_rung[0] == 27u);
      for (int k = 1; k < 4; ++k) BOOST_TEST(per_rung[k] >= per_rung[k - 1] / 3);
    }
  }
}

// The leaderboard's order: a metric first, then the higher rung, then the better metric.
BOOST_AUTO_TEST_CASE(a_higher_rung_ranks_first_then_the_better_metric) {
  const TrialScore none{2, std::nullopt};
  const TrialScore low{0, 0.9};
  const TrialScore high{1, 0.5};
  const TrialScore high_better{1, 0.6};
  BOOST_TEST(RanksBefore(SweepGoal::kMax, low, none));
  BOOST_TEST(!RanksBefore(SweepGoal::kMax, none, low));
  BOOST_TEST(RanksBefore(SweepGoal::kMax, high, low));  // trained longer, though worse
  BOOST_TEST(RanksBefore(SweepGoal::kMax, high_better, high));
  BOOST_TEST(RanksBefore(SweepGoal::kMin, high, high_better));
  BOOST_TEST(!RanksBefore(SweepGoal::kMax, high, high));  // equals keep their order
  BOOST_TEST(RanksBefore(SweepGoal::kMax, TrialScore{-1, 0.2}, TrialScore{-1, 0.1}));
  BOOST_TEST(RanksBefore(SweepGoal::kMax, TrialScore{1, 0.1}, TrialScore{1, kNaN}));
}

BOOST_AUTO_TEST_CASE(the_reasons_name_the_rung_and_its_steps) {
  BOOST_TEST(AshaPausedReason(0, 90) == "paused by ASHA at rung 0 (90 steps)");
  BOOST_TEST(AshaPromotedReason(1, 270) == "promoted by ASHA to rung 1 (270 steps)");
  BOOST_TEST(AshaStoppedReason(AshaOptions{90, 810, 3}, 0) ==
             "stopped by ASHA at rung 0 of 2 (90 of 810 steps): not among the top 1/3 of its rung");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace sweep_asha_test
}  // namespace dtrain::config
