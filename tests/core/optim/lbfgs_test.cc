// L-BFGS and its strong Wolfe line search: the conditions hold where the search stops, known
// minimisers are reached, and a run restored from its saved state continues bit for bit.
#include "core/optim/lbfgs.h"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <vector>

#include "core/optim/line_search.h"
#include "core/optim/test_util.h"
#include "core/optim/vector_slices.h"

namespace dtrain::optim {
namespace lbfgs_test {

BOOST_AUTO_TEST_SUITE(line_search)

// phi(a) = f(x0 + a d) for f(x) = x^4 - 3x^2 + x along d = 1 from x0 = 0 (slope 1 < 0 along -1).
LinePoint Quartic(double a) {
  const double x = -a;  // direction -1
  return {x * x * x * x - 3 * x * x + x, -(4 * x * x * x - 6 * x + 1)};
}

void CheckWolfe(const LineSearchResult& r, LinePoint start, const LineSearchOptions& o) {
  BOOST_TEST(r.found);
  BOOST_TEST(r.at.value <= start.value + o.c1 * r.step * start.slope);
  BOOST_TEST(std::abs(r.at.slope) <= -o.c2 * start.slope);
}

BOOST_AUTO_TEST_CASE(meets_strong_wolfe_from_short_and_long_first_steps) {
  const LinePoint start = Quartic(0.0);
  BOOST_REQUIRE(start.slope < 0.0);
  for (const double first : {1e-3, 0.1, 1.0, 10.0, 100.0}) {
    for (const double c2 : {0.9, 0.1}) {
      BOOST_TEST_CONTEXT("first step " << first << " c2 " << c2) {
        LineSearchOptions o;
        o.c2 = c2;
        double last_called = -1.0;
        auto phi = [&](double a) -> Result<LinePoint> {
          last_called = a;
          return Quartic(a);
        };
        Result<LineSearchResult> r = StrongWolfeSearch(phi, start, first, o);
        BOOST_REQUIRE(r.ok());
        CheckWolfe(r.value(), start, o);
        BOOST_TEST(r.value().step == last_called);  // the newest trial is the accepted one
        BOOST_TEST(r.value().evaluations <= o.max_evaluations);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(non_finite_values_are_too_far) {
  auto phi = [](double a) -> Result<LinePoint> {
    if (a > 2.0) return LinePoint{std::nan(""), std::nan("")};
    return LinePoint{(a - 1.5) * (a - 1.5), 2 * (a - 1.5)};
  };
  Result<LineSearchResult> r = StrongWolfeSearch(phi, {2.25, -3.0}, 64.0, {});
  BOOST_REQUIRE(r.ok());
  CheckWolfe(r.value(), {2.25, -3.0}, {});
}

BOOST_AUTO_TEST_CASE(refuses_an_ascent_direction_and_passes_errors_on) {
  auto phi = [](double) -> Result<LinePoint> { return Status::Error("shard 1 is gone"); };
  BOOST_TEST(!StrongWolfeSearch(phi, {1.0, 0.5}, 1.0, {}).ok());
  Result<LineSearchResult> r = StrongWolfeSearch(phi, {1.0, -0.5}, 1.0, {});
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.status().message() == "shard 1 is gone");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(lbfgs)

// f(x) = 1/2 x'Ax - b'x with A = tridiag(-1, 4, -1) (n x n), b = 1: the minimiser solves Ax = b.
constexpr int kN = 60;
Result<double> Quadratic(std::span<const float> x, std::span<float> g) {
  double f = 0.0;
  for (int i = 0; i < kN; ++i) {
    double ax = 4.0 * x[i];
    if (i > 0) ax -= x[i - 1];
    if (i + 1 < kN) ax -= x[i + 1];
    g[i] = static_cast<float>(ax - 1.0);
    f += 0.5 * x[i] * ax - x[i];
  }
  return f;
}

// The minimiser by the Thomas algorithm, in double.
std::vector<double> QuadraticMinimiser() {
  std::vector<double> c(kN), d(kN), x(kN);
  c[0] = -1.0 / 4.0;
  d[0] = 1.0 / 4.0;
  for (int i = 1; i < kN; ++i) {
    const double m = 4.0 + c[i - 1];
    c[i] = -1.0 / m;
    d[i] = (1.0 + d[i - 1]) / m;
  }
  x[kN - 1] = d[kN - 1];
  for (int i = kN - 2; i >= 0; --i) x[i] = d[i] - c[i] * x[i + 1];
  return x;
}

struct Run {
  std::vector<LbfgsIteration> iterations;
  LbfgsStop stop = LbfgsStop::kNone;
};

Run Minimise(Lbfgs& lbfgs) {
  Run run;
  for (int guard = 0; guard < 10000; ++guard) {
    Result<LbfgsIteration> it = lbfgs.Iterate();
    BOOST_REQUIRE(it.ok());
    run.iterations.push_back(it.value());
    if (it.value().stop != LbfgsStop::kNone) {
      run.stop = it.value().stop;
      break;
    }
  }
  return run;
}

BOOST_AUTO_TEST_CASE(reaches_a_quadratics_minimiser) {
  LbfgsOptions o;
  o.history = 5;
  o.gradient_tolerance = 1e-5;
  o.loss_tolerance = 0.0;
  LocalVectors v(LbfgsVectorCount(o.history), kN, Quadratic);
  Lbfgs lbfgs(o, v);
  BOOST_REQUIRE(lbfgs.Start().ok());
  const Run run = Minimise(lbfgs);
  BOOST_TEST(static_cast<int>(run.stop) == static_cast<int>(LbfgsStop::kGradientTolerance));
  BOOST_TEST(run.iterations.size() < 40u);  // well-conditioned: far fewer than n
  const std::vector<double> exact = QuadraticMinimiser();
  for (int i = 0; i < kN; ++i)
    BOOST_TEST(v.slices()[kX][i] == exact[i], boost::test_tools::tolerance(1e-5));
  for (std::size_t i = 1; i < run.iterations.size(); ++i) {
    BOOST_TEST(run.iterations[i].loss <= run.iterations[i - 1].loss);  // sufficient decrease
  }
}

Result<double> Rosenbrock(std::span<const float> x, std::span<float> g) {
  const double a = x[0], b = x[1];
  g[0] = static_cast<float>(-2 * (1 - a) - 400 * a * (b - a * a));
  g[1] = static_cast<float>(200 * (b - a * a));
  return (1 - a) * (1 - a) + 100 * (b - a * a) * (b - a * a);
}

BOOST_AUTO_TEST_CASE(finds_rosenbrocks_valley_floor) {
  LbfgsOptions o;
  o.max_iterations = 200;
  o.gradient_tolerance = 1e-4;
  LocalVectors v(LbfgsVectorCount(o.history), 2, Rosenbrock);
  v.slices()[kX][0] = -1.2f;
  v.slices()[kX][1] = 1.0f;
  Lbfgs lbfgs(o, v);
  BOOST_REQUIRE(lbfgs.Start().ok());
  const Run run = Minimise(lbfgs);
  BOOST_TEST(static_cast<int>(run.stop) != static_cast<int>(LbfgsStop::kMaxIterations));
  BOOST_TEST(v.slices()[kX][0] == 1.0, boost::test_tools::tolerance(1e-3));
  BOOST_TEST(v.slices()[kX][1] == 1.0, boost::test_tools::tolerance(1e-3));
}

BOOST_AUTO_TEST_CASE(stops_at_max_iterations_and_on_a_flat_loss) {
  LbfgsOptions o;
  o.max_iterations = 3;
  o.gradient_tolerance = 0.0;
  LocalVectors v(LbfgsVectorCount(o.history), kN, Quadratic);
  Lbfgs lbfgs(o, v);
  BOOST_REQUIRE(lbfgs.Start().ok());
  const Run run = Minimise(lbfgs);
  BOOST_TEST(run.iterations.size() == 3u);
  BOOST_TEST(static_cast<int>(run.stop) == static_cast<int>(LbfgsStop::kMaxIterations));
  BOOST_TEST(static_cast<int>(lbfgs.Iterate().value().stop) ==
             static_cast<int>(LbfgsStop::kMaxIterations));  // nothing more is done
  BOOST_TEST(lbfgs.state().iteration == 3);

  o.max_iterations = 1000;
  o.loss_tolerance = 1e-3;
  LocalVectors w(LbfgsVectorCount(o.history), kN, Quadratic);
  Lbfgs loose(o, w);
  BOOST_REQUIRE(loose.Start().ok());
  BOOST_TEST(static_cast<int>(Minimise(loose).stop) == static_cast<int>(LbfgsStop::kLossTolerance));
}

// The vectors a checkpoint keeps: x, g and the history.
std::vector<std::vector<float>> Saved(LocalVectors& v, int history) {
  std::vector<std::vector<float>> saved;
  for (int i : {kX, kG}) saved.emplace_back(v.slices()[i].begin(), v.slices()[i].end());
  for (int slot = 0; slot < history; ++slot) {
    for (int i : {HistoryS(slot), HistoryY(slot)}) {
      saved.emplace_back(v.slices()[i].begin(), v.slices()[i].end());
    }
  }
  return saved;
}

BOOST_AUTO_TEST_CASE(a_restored_run_continues_bit_for_bit) {
  LbfgsOptions o;
  o.history = 3;  // the ring wraps before the restore
  o.gradient_tolerance = 0.0;
  o.loss_tolerance = 0.0;
  o.max_iterations = 12;
  LocalVectors whole(LbfgsVectorCount(o.history), kN, Quadratic);
  Lbfgs straight(o, whole);
  BOOST_REQUIRE(straight.Start().ok());
  LocalVectors resumed(LbfgsVectorCount(o.history), kN, Quadratic);
  std::vector<std::vector<float>> saved;
  LbfgsState state;
  for (int i = 0; i < 12; ++i) {
    BOOST_REQUIRE(straight.Iterate().ok());
    if (i == 4) {
      saved = Saved(whole, o.history);
      state = straight.state();
    }
  }
  // A new process: the saved vectors into place, then Restore and the remaining iterations.
  std::vector<int> order{kX, kG};
  for (int slot = 0; slot < o.history; ++slot)
    order.insert(order.end(), {HistoryS(slot), HistoryY(slot)});
  for (std::size_t k = 0; k < order.size(); ++k) {
    std::copy(saved[k].begin(), saved[k].end(), resumed.slices()[order[k]].begin());
  }
  Lbfgs again(o, resumed);
  BOOST_REQUIRE(again.Restore(state).ok());
  while (again.Iterate().value().stop == LbfgsStop::kNone) {
  }
  BOOST_TEST((again.state() == straight.state()));
  BOOST_TEST(BitEqual(resumed.slices()[kX], whole.slices()[kX]));

  LbfgsState broken = state;
  broken.newest = o.history;
  BOOST_TEST(!Lbfgs(o, resumed).Restore(broken).ok());
}

BOOST_AUTO_TEST_CASE(validates_its_options) {
  BOOST_TEST(ValidateLbfgsOptions({}).ok());
  LbfgsOptions o;
  o.history = 0;
  BOOST_TEST(ValidateLbfgsOptions(o).message().find("history") == 0u);
  o = {};
  o.max_iterations = 0;
  BOOST_TEST(!ValidateLbfgsOptions(o).ok());
  o = {};
  o.gradient_tolerance = -1.0;
  BOOST_TEST(!ValidateLbfgsOptions(o).ok());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace lbfgs_test
}  // namespace dtrain::optim
