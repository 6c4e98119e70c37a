// L-BFGS (Nocedal & Wright, "Numerical Optimization", algorithm 7.5) over vectors that may live
// anywhere: in this process (LocalVectors, core/optim/vector_slices.h), or cut into slices on
// parameter shards that run the vector operations the driver orders, so that only scalars reach
// the driver (Sandblaster, Dean et al. 2012, section 4.2).
//
//   LocalVectors vectors(LbfgsVectorCount(options.history), n, objective);
//   Lbfgs lbfgs(options, vectors);
//   Status s = lbfgs.Start();                      // f and grad f at x (vector kX)
//   while (true) { Result<LbfgsIteration> it = lbfgs.Iterate(); ...; if (it.value().stop ...) }
//
// The vectors, by index (LbfgsVectorCount(m) of them, each as long as the parameters):
//   kX the parameters, kG the gradient there, kD the search direction, kTrial and kTrialGrad the
//   line search's newest point and its gradient, then the history: s_i = x_{k+1} - x_k at
//   HistoryS(i) and y_i = g_{k+1} - g_k at HistoryY(i), i in [0, m), a ring of slots.
// The state that survives an iteration (and a checkpoint) is kX, kG, the history and
// LbfgsState; the rest is scratch.
//
// Each iteration: the two-loop recursion turns -g into d = -H g (H_0 = gamma I, gamma = s.y/y.y of
// the newest pair), a strong Wolfe line search (line_search.h) along d (first trial step 1, or
// min(1, 1/|g|) without history), then the pair (s, y) joins the history when s.y > 0 (else it is
// skipped, keeping H positive definite). A direction that is not a descent direction, or a line
// search that fails, clears the history and retries along -g once; a failure then stops the run
// (kNoProgress: the objective cannot be lowered at float precision, usually at the optimum).
// Stops: |g| <= gradient_tolerance; (f_k - f_{k+1}) / max(|f_k|, |f_{k+1}|, 1) <= loss_tolerance
// (scipy's ftol rule); max_iterations.
// Dot products are accumulated in double; one thread at a time.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/optim/line_search.h"
#include "core/status.h"

namespace dtrain::optim {

struct LbfgsOptions {
  int history = 10;                   // m, the (s, y) pairs kept, in [1, 1000]
  std::int64_t max_iterations = 100;  // >= 1
  double gradient_tolerance = 1e-5;   // on the gradient's 2-norm, >= 0
  double loss_tolerance = 1e-10;      // on the relative decrease of the objective, >= 0
  int max_evaluations = 20;           // per line search, >= 1
  bool operator==(const LbfgsOptions&) const = default;
};

// The vector indices (see the file comment).
inline constexpr int kX = 0, kG = 1, kD = 2, kTrial = 3, kTrialGrad = 4;
inline constexpr int HistoryS(int slot) { return 5 + 2 * slot; }
inline constexpr int HistoryY(int slot) { return 6 + 2 * slot; }
inline constexpr int LbfgsVectorCount(int history) { return 5 + 2 * history; }

// The vectors L-BFGS works on, and the objective; each call may fail (a lost shard or worker).
class LbfgsVectors {
 public:
  virtual ~LbfgsVectors() = default;
  virtual Result<double> Dot(int a, int b) = 0;
  virtual Status Axpy(double alpha, int x, int y) = 0;  // y += alpha x
  virtual Status Scale(double alpha, int v) = 0;        // v *= alpha
  virtual Status Copy(int from, int to) = 0;
  // The objective at vector `at`; its gradient is written to vector `grad`.
  virtual Result<double> Evaluate(int at, int grad) = 0;
};

enum class LbfgsStop { kNone, kGradientTolerance, kLossTolerance, kMaxIterations, kNoProgress };
std::string_view LbfgsStopName(LbfgsStop stop);  // "gradient tolerance", ...

// What a checkpoint keeps beside the vectors kX, kG and the history.
struct LbfgsState {
  std::int64_t iteration = 0;    // iterations completed
  std::int64_t evaluations = 0;  // objective evaluations, the first one included
  double loss = 0.0;             // f at kX
  int pairs = 0;                 // history pairs held, <= m
  int newest = -1;               // the slot of the newest pair (-1: none)
  bool operator==(const LbfgsState&) const = default;
};

struct LbfgsIteration {
  std::int64_t iteration = 0;  // iterations completed, this one included
  double loss = 0.0;           // f after it
  double gradient_norm = 0.0;  // |g| after it
  double step_length = 0.0;    // the accepted step a (x moved by a |d|: see direction_norm)
  double direction_norm = 0.0;
  int evaluations = 0;                // objective evaluations this iteration took
  LbfgsStop stop = LbfgsStop::kNone;  // why the run ends after this iteration, if it does
};

// Checks every option's range; the message names the option as the job file spells it
// ("history", "max_iterations", ...).
Status ValidateLbfgsOptions(const LbfgsOptions& options);

class Lbfgs {
 public:
  Lbfgs(LbfgsOptions options, LbfgsVectors& vectors);

  // A fresh run: evaluates f and its gradient at kX.
  Status Start();
  // A resumed run: kX, kG and the history hold a checkpoint's values; recomputes each pair's
  // 1 / s.y and the gradient norm.
  Status Restore(const LbfgsState& state);
  // One iteration. After one whose stop is not kNone (or once Stopped()), nothing more is done.
  Result<LbfgsIteration> Iterate();
  // Why the run is over before any iteration (a starting point that already meets a tolerance).
  LbfgsStop Stopped() const { return stopped_; }

  const LbfgsState& state() const { return state_; }
  double gradient_norm() const { return gradient_norm_; }
  const LbfgsOptions& options() const { return options_; }

 private:
  // d = -H g by the two-loop recursion; returns g.d.
  Result<double> Direction();
  Result<double> SteepestDirection();  // d = -g; returns g.d
  Result<LineSearchResult> SearchAlong(double slope, double initial_step);
  // Moves x to the accepted trial point, records (s, y), updates the state.
  Status Accept(const LineSearchResult& found);
  void ClearHistory();
  int Slot(int age) const;  // age 0: the newest pair's slot, pairs - 1: the oldest's

  LbfgsOptions options_;
  LbfgsVectors& v_;
  LbfgsState state_;
  std::vector<double> rho_;  // per slot: 1 / s.y
  double gradient_norm_ = 0.0;
  LbfgsStop stopped_ = LbfgsStop::kNone;
};

}  // namespace dtrain::optim
