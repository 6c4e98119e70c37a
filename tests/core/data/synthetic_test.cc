#include <boost/test/unit_test.hpp>
#include <cmath>
#include <utility>
#include <vector>

#include "core/data/readers.h"

namespace dtrain::data {
namespace synthetic_test {

// Least-squares fit of labels = w.x + b by the normal equations (Gaussian elimination with
// partial pivoting); returns the standard deviation of the residuals.
double ResidualStd(const Dataset& d) {
  const std::size_t n = d.features + 1;  // weights and the bias
  std::vector<double> a(n * n, 0.0), rhs(n, 0.0), row(n);
  for (std::size_t r = 0; r < d.rows; ++r) {
    for (std::size_t j = 0; j < d.features; ++j) row[j] = d.floats[r * d.features + j];
    row[d.features] = 1.0;
    for (std::size_t i = 0; i < n; ++i) {
      rhs[i] += row[i] * d.labels[r];
      for (std::size_t j = 0; j < n; ++j) a[i * n + j] += row[i] * row[j];
    }
  }
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t pivot = c;
    for (std::size_t i = c + 1; i < n; ++i) {
      if (std::abs(a[i * n + c]) > std::abs(a[pivot * n + c])) pivot = i;
    }
    for (std::size_t j = 0; j < n; ++j) std::swap(a[c * n + j], a[pivot * n + j]);
    std::swap(rhs[c], rhs[pivot]);
    for (std::size_t i = 0; i < n; ++i) {
      if (i == c) continue;
      const double f = a[i * n + c] / a[c * n + c];
      for (std::size_t j = 0; j < n; ++j) a[i * n + j] -= f * a[c * n + j];
      rhs[i] -= f * rhs[c];
    }
  }
  double sum_sq = 0.0;
  for (std::size_t r = 0; r < d.rows; ++r) {
    double prediction = rhs[d.features] / a[d.features * n + d.features];
    for (std::size_t j = 0; j < d.features; ++j) {
      prediction += rhs[j] / a[j * n + j] * d.floats[r * d.features + j];
    }
    sum_sq += (d.labels[r] - prediction) * (d.labels[r] - prediction);
  }
  return std::sqrt(sum_sq / static_cast<double>(d.rows));
}

bool SameData(const Dataset& a, const Dataset& b) {
  return a.rows == b.rows && a.features == b.features && a.floats == b.floats &&
         a.labels == b.labels && a.num_classes == b.num_classes;
}

BOOST_AUTO_TEST_SUITE(synthetic)

BOOST_AUTO_TEST_CASE(blobs_are_deterministic_by_seed) {
  BlobsOptions o;
  o.seed = 11;
  const Dataset a = MakeBlobs(o);
  BOOST_TEST(SameData(a, MakeBlobs(o)));
  o.seed = 12;
  BOOST_TEST(!SameData(a, MakeBlobs(o)));
  BOOST_TEST(a.rows == 1000u);
  BOOST_TEST(a.features == 2u);
  BOOST_TEST(a.floats.size() == 2000u);
  BOOST_TEST(a.num_classes == 3);
  BOOST_TEST(a.source == "synthetic:blobs");
}

BOOST_AUTO_TEST_CASE(blob_classes_are_balanced_and_clustered) {
  BlobsOptions o;
  o.rows = 6000;
  o.features = 4;
  o.classes = 3;
  o.spread = 0.5f;
  const Dataset d = MakeBlobs(o);
  std::vector<int> count(3, 0);
  std::vector<double> sum(3 * 4, 0.0), sum_sq(3 * 4, 0.0);
  for (std::size_t r = 0; r < d.rows; ++r) {
    const float label = d.labels[r];
    BOOST_TEST_REQUIRE((label == 0.0f || label == 1.0f || label == 2.0f));
    const auto c = static_cast<std::size_t>(label);
    ++count[c];
    for (std::size_t j = 0; j < 4; ++j) {
      sum[c * 4 + j] += d.floats[r * 4 + j];
      sum_sq[c * 4 + j] += d.floats[r * 4 + j] * d.floats[r * 4 + j];
    }
  }
  for (int n : count) BOOST_TEST(std::abs(n - 2000) < 150);
  // Within a class, every feature scatters around its centre with standard deviation `spread`.
  for (std::size_t c = 0; c < 3; ++c) {
    for (std::size_t j = 0; j < 4; ++j) {
      const double mean = sum[c * 4 + j] / count[c];
      const double stddev = std::sqrt(sum_sq[c * 4 + j] / count[c] - mean * mean);
      BOOST_TEST(std::abs(stddev - 0.5) < 0.05, "class " << c << " feature " << j);
      BOOST_TEST(std::abs(mean) <= 5.0 + 0.1);
    }
  }
}

BOOST_AUTO_TEST_CASE(teacher_is_an_exact_linear_function_plus_the_requested_noise) {
  TeacherOptions o;
  o.rows = 4000;
  o.features = 3;
  o.noise = 0.0f;
  const Dataset clean = MakeLinearTeacher(o);
  BOOST_TEST(clean.num_classes == 0);
  BOOST_TEST(clean.source == "synthetic:teacher");
  BOOST_TEST(clean.floats.size() == 12000u);
  BOOST_TEST(ResidualStd(clean) < 1e-5);

  o.noise = 0.5f;
  const Dataset noisy = MakeLinearTeacher(o);
  BOOST_TEST(std::abs(ResidualStd(noisy) - 0.5) < 0.03);
  BOOST_TEST(SameData(noisy, MakeLinearTeacher(o)));
  o.seed = 2;
  BOOST_TEST(!SameData(noisy, MakeLinearTeacher(o)));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace synthetic_test
}  // namespace dtrain::data
