#include "core/optim/lbfgs.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace dtrain::optim {

std::string_view LbfgsStopName(LbfgsStop stop) {
  switch (stop) {
    case LbfgsStop::kNone:
      return "none";
    case LbfgsStop::kGradientTolerance:
      return "gradient tolerance";
    case LbfgsStop::kLossTolerance:
      return "loss tolerance";
    case LbfgsStop::kMaxIterations:
      return "max iterations";
    case LbfgsStop::kNoProgress:
      return "no further decrease";
  }
  return "unknown";
}

Status ValidateLbfgsOptions(const LbfgsOptions& o) {
  if (o.history < 1 || o.history > 1000) {
    return Status::Error("history must be in [1, 1000], got " + std::to_string(o.history));
  }
  if (o.max_iterations < 1) {
    return Status::Error("max_iterations must be >= 1, got " + std::to_string(o.max_iterations));
  }
  if (!(o.gradient_tolerance >= 0.0) || !std::isfinite(o.gradient_tolerance)) {
    return Status::Error("gradient_tolerance must be a finite number >= 0");
  }
  if (!(o.loss_tolerance >= 0.0) || !std::isfinite(o.loss_tolerance)) {
    return Status::Error("loss_tolerance must be a finite number >= 0");
  }
  if (o.max_evaluations < 1) return Status::Error("max_evaluations must be >= 1");
  return Status::Ok();
}

Lbfgs::Lbfgs(LbfgsOptions options, LbfgsVectors& vectors)
    : options_(options), v_(vectors), rho_(static_cast<std::size_t>(options.history), 0.0) {}

Status Lbfgs::Start() {
  Result<double> f = v_.Evaluate(kX, kG);
  if (!f.ok()) return f.status();
  if (!std::isfinite(f.value())) {
    return Status::Error("the objective is not finite at the starting point");
  }
  state_ = {.iteration = 0, .evaluations = 1, .loss = f.value(), .pairs = 0, .newest = -1};
  Result<double> gg = v_.Dot(kG, kG);
  if (!gg.ok()) return gg.status();
  gradient_norm_ = std::sqrt(gg.value());
  if (gradient_norm_ <= options_.gradient_tolerance) stopped_ = LbfgsStop::kGradientTolerance;
  return Status::Ok();
}

Status Lbfgs::Restore(const LbfgsState& state) {
  if (state.pairs < 0 || state.pairs > options_.history || state.newest < -1 ||
      state.newest >= options_.history || (state.pairs == 0) != (state.newest == -1) ||
      state.iteration < 0 || state.evaluations < 1) {
    return Status::Error("the saved L-BFGS state does not fit a history of " +
                         std::to_string(options_.history) + " pairs");
  }
  state_ = state;
  if (state_.iteration >= options_.max_iterations) stopped_ = LbfgsStop::kMaxIterations;
  for (int age = 0; age < state_.pairs; ++age) {
    const int slot = Slot(age);
    Result<double> sy = v_.Dot(HistoryS(slot), HistoryY(slot));
    if (!sy.ok()) return sy.status();
    rho_[static_cast<std::size_t>(slot)] = 1.0 / sy.value();
  }
  Result<double> gg = v_.Dot(kG, kG);
  if (!gg.ok()) return gg.status();
  gradient_norm_ = std::sqrt(gg.value());
  return Status::Ok();
}

int Lbfgs::Slot(int age) const {
  return (state_.newest - age + options_.history) % options_.history;
}

void Lbfgs::ClearHistory() {
  state_.pairs = 0;
  state_.newest = -1;
}

Result<double> Lbfgs::SteepestDirection() {
  if (Status s = v_.Copy(kG, kD); !s.ok()) return s;
  if (Status s = v_.Scale(-1.0, kD); !s.ok()) return s;
  return -gradient_norm_ * gradient_norm_;
}

Result<double> Lbfgs::Direction() {
  if (state_.pairs == 0) return SteepestDirection();
  if (Status s = v_.Copy(kG, kD); !s.ok()) return s;
  std::vector<double> alpha(static_cast<std::size_t>(state_.pairs));
  for (int age = 0; age < state_.pairs; ++age) {
    const int slot = Slot(age);
    Result<double> sq = v_.Dot(HistoryS(slot), kD);
    if (!sq.ok()) return sq.status();
    alpha[age] = rho_[slot] * sq.value();
    if (Status s = v_.Axpy(-alpha[age], HistoryY(slot), kD); !s.ok()) return s;
  }
  Result<double> yy = v_.Dot(HistoryY(state_.newest), HistoryY(state_.newest));
  if (!yy.ok()) return yy.status();
  const double gamma = 1.0 / (rho_[state_.newest] * yy.value());  // s.y / y.y
  if (Status s = v_.Scale(gamma, kD); !s.ok()) return s;
  for (int age = state_.pairs - 1; age >= 0; --age) {
    const int slot = Slot(age);
    Result<double> yr = v_.Dot(HistoryY(slot), kD);
    if (!yr.ok()) return yr.status();
    const double beta = rho_[slot] * yr.value();
    if (Status s = v_.Axpy(alpha[age] - beta, HistoryS(slot), kD); !s.ok()) return s;
  }
  if (Status s = v_.Scale(-1.0, kD); !s.ok()) return s;
  return v_.Dot(kG, kD);
}

Result<LineSearchResult> Lbfgs::SearchAlong(double slope, double initial_step) {
  const LineFunction phi = [this](double step) -> Result<LinePoint> {
    if (Status s = v_.Copy(kX, kTrial); !s.ok()) return s;
    if (Status s = v_.Axpy(step, kD, kTrial); !s.ok()) return s;
    Result<double> f = v_.Evaluate(kTrial, kTrialGrad);
    if (!f.ok()) return f.status();
    Result<double> g_dot_d = v_.Dot(kTrialGrad, kD);
    if (!g_dot_d.ok()) return g_dot_d.status();
    return LinePoint{f.value(), g_dot_d.value()};
  };
  LineSearchOptions search;
  search.max_evaluations = options_.max_evaluations;
  Result<LineSearchResult> found =
      StrongWolfeSearch(phi, {state_.loss, slope}, initial_step, search);
  if (found.ok()) state_.evaluations += found.value().evaluations;
  return found;
}

Status Lbfgs::Accept(const LineSearchResult& found) {
  const int slot = (state_.newest + 1) % options_.history;
  const int s = HistoryS(slot), y = HistoryY(slot);
  for (Status st :
       {v_.Copy(kTrial, s), v_.Axpy(-1.0, kX, s), v_.Copy(kTrialGrad, y), v_.Axpy(-1.0, kG, y)}) {
    if (!st.ok()) return st;
  }
  Result<double> sy = v_.Dot(s, y);
  if (!sy.ok()) return sy.status();
  if (sy.value() > 0.0 && std::isfinite(sy.value())) {  // else skipped: H stays positive definite
    rho_[static_cast<std::size_t>(slot)] = 1.0 / sy.value();
    state_.newest = slot;
    state_.pairs = std::min(state_.pairs + 1, options_.history);
  }
  if (Status st = v_.Copy(kTrial, kX); !st.ok()) return st;
  if (Status st = v_.Copy(kTrialGrad, kG); !st.ok()) return st;
  Result<double> gg = v_.Dot(kG, kG);
  if (!gg.ok()) return gg.status();
  gradient_norm_ = std::sqrt(gg.value());
  state_.loss = found.at.value;
  ++state_.iteration;
  return Status::Ok();
}

Result<LbfgsIteration> Lbfgs::Iterate() {
  LbfgsIteration report;
  report.iteration = state_.iteration;
  report.loss = state_.loss;
  report.gradient_norm = gradient_norm_;
  report.stop = stopped_;
  if (stopped_ != LbfgsStop::kNone) return report;

  const double loss_before = state_.loss;
  const std::int64_t evaluations_before = state_.evaluations;
  bool steepest = state_.pairs == 0;
  Result<double> slope = Direction();
  if (!slope.ok()) return slope.status();
  if (!(slope.value() < 0.0)) {  // not a descent direction (or not finite): start over along -g
    ClearHistory();
    steepest = true;
    slope = SteepestDirection();
    if (!slope.ok()) return slope.status();
  }
  Result<LineSearchResult> found =
      SearchAlong(slope.value(), steepest ? std::min(1.0, 1.0 / gradient_norm_) : 1.0);
  if (!found.ok()) return found.status();
  if (!found.value().found && !steepest) {
    ClearHistory();
    slope = SteepestDirection();
    if (!slope.ok()) return slope.status();
    found = SearchAlong(slope.value(), std::min(1.0, 1.0 / gradient_norm_));
    if (!found.ok()) return found.status();
  }
  report.evaluations = static_cast<int>(state_.evaluations - evaluations_before);
  if (!found.value().found) {
    stopped_ = LbfgsStop::kNoProgress;
    report.stop = stopped_;
    return report;
  }
  Result<double> dd = v_.Dot(kD, kD);
  if (!dd.ok()) return dd.status();
  if (Status accepted = Accept(found.value()); !accepted.ok()) return accepted;

  report.iteration = state_.iteration;
  report.loss = state_.loss;
  report.gradient_norm = gradient_norm_;
  report.step_length = found.value().step;
  report.direction_norm = std::sqrt(dd.value());
  const double relative_decrease =
      (loss_before - state_.loss) / std::max({std::abs(loss_before), std::abs(state_.loss), 1.0});
  if (gradient_norm_ <= options_.gradient_tolerance) {
    stopped_ = LbfgsStop::kGradientTolerance;
  } else if (relative_decrease <= options_.loss_tolerance) {
    stopped_ = LbfgsStop::kLossTolerance;
  } else if (state_.iteration >= options_.max_iterations) {
    stopped_ = LbfgsStop::kMaxIterations;
  }
  report.stop = stopped_;
  return report;
}

}  // namespace dtrain::optim
