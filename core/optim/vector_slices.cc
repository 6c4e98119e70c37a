#include "core/optim/vector_slices.h"

#include <algorithm>
#include <cassert>

namespace dtrain::optim {

VectorSlices::VectorSlices(int count, std::size_t length)
    : count_(count), length_(length), values_(static_cast<std::size_t>(count) * length) {}

std::span<float> VectorSlices::operator[](int i) {
  assert(IsVector(i));
  return {values_.data() + static_cast<std::size_t>(i) * length_, length_};
}

std::span<const float> VectorSlices::operator[](int i) const {
  assert(IsVector(i));
  return {values_.data() + static_cast<std::size_t>(i) * length_, length_};
}

double VectorSlices::Dot(int a, int b) const {
  const std::span<const float> x = (*this)[a], y = (*this)[b];
  double sum = 0.0;
  for (std::size_t i = 0; i < length_; ++i) sum += double(x[i]) * double(y[i]);
  return sum;
}

void VectorSlices::Axpy(double alpha, int x, int y) {
  const std::span<const float> from = (*this)[x];
  const std::span<float> to = (*this)[y];
  for (std::size_t i = 0; i < length_; ++i) {
    to[i] = static_cast<float>(double(to[i]) + alpha * double(from[i]));
  }
}

void VectorSlices::Scale(double alpha, int v) {
  for (float& value : (*this)[v]) value = static_cast<float>(alpha * double(value));
}

void VectorSlices::Copy(int from, int to) {
  if (from == to) return;
  const std::span<const float> source = (*this)[from];
  std::copy(source.begin(), source.end(), (*this)[to].begin());
}

LocalVectors::LocalVectors(int count, std::size_t length, Objective objective)
    : slices_(count, length), objective_(std::move(objective)) {}

Status LocalVectors::Axpy(double alpha, int x, int y) {
  slices_.Axpy(alpha, x, y);
  return Status::Ok();
}

Status LocalVectors::Scale(double alpha, int v) {
  slices_.Scale(alpha, v);
  return Status::Ok();
}

Status LocalVectors::Copy(int from, int to) {
  slices_.Copy(from, to);
  return Status::Ok();
}

Result<double> LocalVectors::Evaluate(int at, int grad) {
  return objective_(slices_[at], slices_[grad]);
}

}  // namespace dtrain::optim
