#include "core/optim/line_search.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dtrain::optim {
namespace {

struct Trial {
  double step = 0.0;
  LinePoint at;
};

// The minimiser of the cubic through (a, phi(a), phi'(a)) and (b, ...), kept at least a tenth of
// the interval away from its ends; the midpoint when the cubic has no real minimiser.
double CubicStep(const Trial& a, const Trial& b) {
  const double lo = std::min(a.step, b.step), hi = std::max(a.step, b.step);
  const double margin = 0.1 * (hi - lo);
  const double midpoint = 0.5 * (lo + hi);
  const double d1 = a.at.slope + b.at.slope - 3.0 * (a.at.value - b.at.value) / (a.step - b.step);
  const double radicand = d1 * d1 - a.at.slope * b.at.slope;
  if (!std::isfinite(radicand) || radicand < 0.0) return midpoint;
  const double d2 = std::copysign(std::sqrt(radicand), b.step - a.step);
  const double denominator = b.at.slope - a.at.slope + 2.0 * d2;
  if (denominator == 0.0) return midpoint;
  const double step = b.step - (b.step - a.step) * (b.at.slope + d2 - d1) / denominator;
  if (!std::isfinite(step) || step < lo + margin || step > hi - margin) return midpoint;
  return step;
}

class Search {
 public:
  Search(const LineFunction& phi, LinePoint start, const LineSearchOptions& options)
      : phi_(phi), start_(start), options_(options) {}

  Result<LineSearchResult> Run(double initial_step) {
    Trial previous{0.0, start_};
    double step = initial_step;
    for (int i = 0; evaluations_ < options_.max_evaluations; ++i) {
      Result<LinePoint> at = Evaluate(step);
      if (!at.ok()) return at.status();
      const Trial trial{step, at.value()};
      if (!SufficientDecrease(trial) || (i > 0 && trial.at.value >= previous.at.value)) {
        return Zoom(previous, trial);
      }
      if (Curvature(trial)) return Found(trial);
      if (trial.at.slope >= 0.0) return Zoom(trial, previous);
      previous = trial;
      step *= 2.0;
    }
    return NotFound(step);
  }

 private:
  Result<LinePoint> Evaluate(double step) {
    ++evaluations_;
    last_step_ = step;
    Result<LinePoint> at = phi_(step);
    if (at.ok() && !std::isfinite(at.value().value)) {
      at.value().value = std::numeric_limits<double>::infinity();
    }
    return at;
  }
  bool SufficientDecrease(const Trial& t) const {
    return t.at.value <= start_.value + options_.c1 * t.step * start_.slope;
  }
  bool Curvature(const Trial& t) const {
    return std::abs(t.at.slope) <= -options_.c2 * start_.slope;
  }
  LineSearchResult Found(const Trial& t) const { return {true, t.step, t.at, evaluations_}; }
  LineSearchResult NotFound(double step) const { return {false, step, {}, evaluations_}; }

  // lo: the best step so far meeting sufficient decrease; the minimiser lies between lo and hi.
  Result<LineSearchResult> Zoom(Trial lo, Trial hi) {
    while (evaluations_ < options_.max_evaluations) {
      const double width = std::abs(hi.step - lo.step);
      if (width <= std::numeric_limits<float>::epsilon() * std::max(lo.step, hi.step)) break;
      const double step =
          std::isfinite(hi.at.value) ? CubicStep(lo, hi) : 0.5 * (lo.step + hi.step);
      Result<LinePoint> at = Evaluate(step);
      if (!at.ok()) return at.status();
      const Trial trial{step, at.value()};
      if (!SufficientDecrease(trial) || trial.at.value >= lo.at.value) {
        hi = trial;
        continue;
      }
      if (Curvature(trial)) return Found(trial);
      if (trial.at.slope * (hi.step - lo.step) >= 0.0) hi = lo;
      lo = trial;
    }
    return NotFound(last_step_);
  }

  const LineFunction& phi_;
  const LinePoint start_;
  const LineSearchOptions options_;
  int evaluations_ = 0;
  double last_step_ = 0.0;
};

}  // namespace

Result<LineSearchResult> StrongWolfeSearch(const LineFunction& phi, LinePoint start,
                                           double initial_step, const LineSearchOptions& options) {
  if (!(start.slope < 0.0)) {
    return Status::Error("line search: the direction is not a descent direction (slope " +
                         std::to_string(start.slope) + ")");
  }
  if (!(initial_step > 0.0) || !std::isfinite(initial_step)) {
    return Status::Error("line search: the first step must be positive and finite");
  }
  return Search(phi, start, options).Run(initial_step);
}

}  // namespace dtrain::optim
