// A line search meeting the strong Wolfe conditions (Nocedal & Wright, "Numerical Optimization",
// 2nd ed., algorithms 3.5 and 3.6), for L-BFGS (core/optim/lbfgs.h).
//
//   auto phi = [&](double step) -> Result<LinePoint> { ... f(x + step d), its slope along d ... };
//   Result<LineSearchResult> r = StrongWolfeSearch(phi, {f0, slope0}, 1.0, options);
//
// phi(a) is the objective along the search direction d from x: value f(x + a d) and slope
// grad f(x + a d) . d. The search returns a step a > 0 with
//   sufficient decrease  phi(a) <= phi(0) + c1 a phi'(0)
//   curvature            |phi'(a)| <= c2 |phi'(0)|
// and it is always the step phi was called with LAST, so a caller that keeps only the newest
// trial point (as sharded vectors do) holds the accepted one. It brackets by doubling the step,
// then zooms with safeguarded cubic interpolation (bisection when the cubic is undefined or
// lands within a tenth of the interval's ends). A non-finite phi(a) counts as "too far".
// found = false when max_evaluations pass without a step meeting both conditions, or the bracket
// shrinks below float precision (a minimum flat to the objective's rounding): the caller keeps x.
// Pure function of phi's answers; phi's errors are passed on.
#pragma once

#include <functional>

#include "core/status.h"

namespace dtrain::optim {

struct LinePoint {
  double value = 0.0;  // phi(a)
  double slope = 0.0;  // phi'(a)
};

struct LineSearchOptions {
  double c1 = 1e-4;  // sufficient decrease, in (0, c2)
  double c2 = 0.9;   // curvature, in (c1, 1): 0.9 is the usual choice for quasi-Newton methods
  int max_evaluations = 20;
};

struct LineSearchResult {
  bool found = false;
  double step = 0.0;  // the accepted step (when found), the last one tried otherwise
  LinePoint at;       // phi and phi' there
  int evaluations = 0;
};

using LineFunction = std::function<Result<LinePoint>(double step)>;

// phi(0) = start (its slope must be < 0: a descent direction); first trial at initial_step > 0.
Result<LineSearchResult> StrongWolfeSearch(const LineFunction& phi, LinePoint start,
                                           double initial_step, const LineSearchOptions& options);

}  // namespace dtrain::optim
