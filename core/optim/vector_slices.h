// VectorSlices: a set of equal-length float vectors — L-BFGS's vectors (core/optim/lbfgs.h), whole
// in one process or one range of them on a Sandblaster shard — and the operations L-BFGS orders on
// them. LocalVectors: L-BFGS's vectors in this process, with the objective as a function.
//
//   LocalVectors v(LbfgsVectorCount(10), n, [&](std::span<const float> x, std::span<float> g) {
//     return objective.Evaluate(x, g);
//   });
//   std::copy(init.begin(), init.end(), v.slices()[kX].begin());
//
// Dot accumulates in double in index order; Axpy and Scale compute in double and round each
// result to float once: a pure function of the inputs, so shards of [0, k) and [k, n) together
// give exactly the whole vector's elementwise results (dots differ only in the order their
// partial sums are added). Vector indices are checked by the caller (IsVector). One thread at a
// time.
#pragma once

#include <cstddef>
#include <functional>
#include <span>

#include "core/math/buffer.h"
#include "core/optim/lbfgs.h"

namespace dtrain::optim {

class VectorSlices {
 public:
  VectorSlices(int count, std::size_t length);
  int count() const { return count_; }
  std::size_t length() const { return length_; }
  bool IsVector(int i) const { return i >= 0 && i < count_; }
  std::span<float> operator[](int i);
  std::span<const float> operator[](int i) const;

  double Dot(int a, int b) const;
  void Axpy(double alpha, int x, int y);  // y += alpha x
  void Scale(double alpha, int v);
  void Copy(int from, int to);

 private:
  int count_;
  std::size_t length_;
  math::FloatBuffer values_;  // vector i at [i * length, (i + 1) * length)
};

class LocalVectors final : public LbfgsVectors {
 public:
  // f(x), with its gradient written to grad (both the parameters' length).
  using Objective = std::function<Result<double>(std::span<const float> x, std::span<float> grad)>;
  LocalVectors(int count, std::size_t length, Objective objective);

  VectorSlices& slices() { return slices_; }

  Result<double> Dot(int a, int b) override { return slices_.Dot(a, b); }
  Status Axpy(double alpha, int x, int y) override;
  Status Scale(double alpha, int v) override;
  Status Copy(int from, int to) override;
  Result<double> Evaluate(int at, int grad) override;

 private:
  VectorSlices slices_;
  Objective objective_;
};

}  // namespace dtrain::optim
