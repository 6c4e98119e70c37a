// An independent reference for L-BFGS tests: the exact optimum of L2-regularised logistic or
// softmax regression, by Newton's method in double precision on the explicit Hessian.
//
//   double f_star = ExactOptimum(rows, features, x, labels, classes, wd).objective;
//
// The objective is dtrain's (core/train/batch_objective.h): the mean cross-entropy over the rows
// plus wd/2 |W|^2 on the weights (biases free). Parameters are laid out as a dtrain linear layer:
// W [features x outputs] row-major, then b [outputs]; with x~ = (x, 1), parameter (j, c) is at
// j * outputs + c for the weights and the bias alike. outputs = 1 (classes 2): the sigmoid and
// binary cross-entropy; outputs = classes > 2: softmax. Small problems only (the Hessian is
// dense): (features + 1) * outputs up to a few hundred. Pure function.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

namespace dtrain::testing {

struct Optimum {
  std::vector<double> params;
  double objective = 0.0;
  double gradient_norm = 0.0;
};

namespace detail {

// Solves H z = g in place (g becomes z) by Gaussian elimination with partial pivoting.
inline void Solve(std::vector<double> h, std::vector<double>& g, std::size_t n) {
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < n; ++r) {
      if (std::abs(h[r * n + col]) > std::abs(h[pivot * n + col])) pivot = r;
    }
    for (std::size_t k = 0; k < n; ++k) std::swap(h[col * n + k], h[pivot * n + k]);
    std::swap(g[col], g[pivot]);
    for (std::size_t r = col + 1; r < n; ++r) {
      const double m = h[r * n + col] / h[col * n + col];
      for (std::size_t k = col; k < n; ++k) h[r * n + k] -= m * h[col * n + k];
      g[r] -= m * g[col];
    }
  }
  for (std::size_t col = n; col-- > 0;) {
    for (std::size_t k = col + 1; k < n; ++k) g[col] -= h[col * n + k] * g[k];
    g[col] /= h[col * n + col];
  }
}

// Objective, gradient and Hessian at w.
inline double Evaluate(std::size_t rows, std::size_t d, const std::vector<float>& x,
                       const std::vector<float>& labels, std::size_t outputs, double wd,
                       const std::vector<double>& w, std::vector<double>* grad,
                       std::vector<double>* hess) {
  const std::size_t n = (d + 1) * outputs;
  if (grad) grad->assign(n, 0.0);
  if (hess) hess->assign(n * n, 0.0);
  double loss = 0.0;
  std::vector<double> xt(d + 1), z(outputs), p(outputs);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t j = 0; j < d; ++j) xt[j] = x[r * d + j];
    xt[d] = 1.0;
    for (std::size_t c = 0; c < outputs; ++c) {
      z[c] = 0.0;
      for (std::size_t j = 0; j <= d; ++j) z[c] += xt[j] * w[j * outputs + c];
    }
    const auto label = static_cast<std::size_t>(labels[r]);
    std::vector<double> residual(outputs);
    if (outputs == 1) {
      p[0] = 1.0 / (1.0 + std::exp(-z[0]));
      loss += std::log1p(std::exp(-std::abs(z[0]))) + std::max(z[0], 0.0) - labels[r] * z[0];
      residual[0] = p[0] - labels[r];
    } else {
      const double top = *std::max_element(z.begin(), z.end());
      double sum = 0.0;
      for (std::size_t c = 0; c < outputs; ++c) sum += std::exp(z[c] - top);
      for (std::size_t c = 0; c < outputs; ++c) p[c] = std::exp(z[c] - top) / sum;
      loss += top + std::log(sum) - z[label];
      for (std::size_t c = 0; c < outputs; ++c) residual[c] = p[c] - (c == label ? 1.0 : 0.0);
    }
    for (std::size_t j = 0; j <= d; ++j) {
      for (std::size_t c = 0; c < outputs; ++c) {
        if (grad) (*grad)[j * outputs + c] += residual[c] * xt[j];
        if (!hess) continue;
        for (std::size_t k = 0; k <= d; ++k) {
          for (std::size_t e = 0; e < outputs; ++e) {
            const double curvature = outputs == 1 ? p[0] * (1.0 - p[0])
                                                  : (c == e ? p[c] : 0.0) - p[c] * p[e];
            (*hess)[(j * outputs + c) * n + k * outputs + e] += curvature * xt[j] * xt[k];
          }
        }
      }
    }
  }
  double penalty = 0.0;
  for (std::size_t i = 0; i < d * outputs; ++i) penalty += w[i] * w[i];
  if (grad) {
    for (double& g : *grad) g /= static_cast<double>(rows);
    for (std::size_t i = 0; i < d * outputs; ++i) (*grad)[i] += wd * w[i];
  }
  if (hess) {
    for (double& h : *hess) h /= static_cast<double>(rows);
    for (std::size_t i = 0; i < d * outputs; ++i) (*hess)[i * n + i] += wd;
    // Softmax's biases may all shift together without changing the loss: a tiny ridge keeps the
    // Newton system solvable (the gradient has no component along that direction).
    for (std::size_t i = 0; i < n; ++i) (*hess)[i * n + i] += 1e-12;
  }
  return loss / static_cast<double>(rows) + 0.5 * wd * penalty;
}

}  // namespace detail

// x: rows x features, row-major, already scaled; labels: class indices (0/1 for logistic).
inline Optimum ExactOptimum(std::size_t rows, std::size_t features, const std::vector<float>& x,
                            const std::vector<float>& labels, int classes, double wd) {
  const std::size_t outputs = classes == 2 ? 1 : static_cast<std::size_t>(classes);
  const std::size_t n = (features + 1) * outputs;
  Optimum o;
  o.params.assign(n, 0.0);
  std::vector<double> grad, hess;
  for (int iteration = 0; iteration < 100; ++iteration) {
    const double f = detail::Evaluate(rows, features, x, labels, outputs, wd, o.params, &grad, &hess);
    double norm = 0.0;
    for (double g : grad) norm += g * g;
    o.objective = f;
    o.gradient_norm = std::sqrt(norm);
    if (o.gradient_norm < 1e-13) break;
    std::vector<double> step = grad;
    detail::Solve(hess, step, n);
    // Backtracking keeps Newton safe far from the optimum.
    for (double t = 1.0; t > 1e-10; t *= 0.5) {
      std::vector<double> trial = o.params;
      for (std::size_t i = 0; i < n; ++i) trial[i] -= t * step[i];
      if (detail::Evaluate(rows, features, x, labels, outputs, wd, trial, nullptr, nullptr) <= f) {
        o.params = std::move(trial);
        break;
      }
    }
  }
  return o;
}

}  // namespace dtrain::testing
