#include "core/data/dataset.h"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <numeric>
#include <vector>

namespace dtrain::data {
namespace dataset_test {

// rows x features bytes: byte (r, j) = (7 * r + 3 * j) % 256; labels r % 4.
Dataset ByteSet(std::size_t rows, std::size_t features) {
  Dataset d;
  d.rows = rows;
  d.features = features;
  std::vector<std::uint8_t> values;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t j = 0; j < features; ++j) {
      values.push_back(static_cast<std::uint8_t>((7 * r + 3 * j) % 256));
    }
    d.labels.push_back(static_cast<float>(r % 4));
  }
  d.bytes.assign(values.begin(), values.end());
  d.num_classes = 4;
  d.source = "bytes";
  return d;
}

// Same values as ByteSet, stored as floats.
Dataset FloatSet(std::size_t rows, std::size_t features) {
  Dataset d = ByteSet(rows, features);
  d.floats.assign(d.bytes.begin(), d.bytes.end());
  d.bytes.clear();
  return d;
}

float Feature(const Dataset& d, std::size_t r, std::size_t j) {
  return d.stored_as_bytes() ? d.bytes[r * d.features + j] : d.floats[r * d.features + j];
}

// x and y as GatherBatch must produce them, computed one value at a time.
void ExpectGathered(const Dataset& d, const Scaling& s, const std::vector<std::uint32_t>& rows,
                    const std::vector<float>& x, const std::vector<float>& y) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    BOOST_TEST(y[i] == d.labels[rows[i]]);
    for (std::size_t j = 0; j < d.features; ++j) {
      const float v = Feature(d, rows[i], j);
      const float want =
          s.kind == Scaling::Kind::kConstant ? v / s.divisor : (v - s.mean[j]) * s.inv_std[j];
      BOOST_TEST(x[i * d.features + j] == want, boost::test_tools::tolerance(1e-5f));
    }
  }
}

BOOST_AUTO_TEST_SUITE(dataset)

BOOST_AUTO_TEST_CASE(gather_converts_bytes_and_floats_for_any_index_order) {
  // Runs of consecutive rows, repeats, reversed and single rows all take the same path's result.
  const std::vector<std::uint32_t> rows = {5, 6, 7, 2, 2, 9, 8, 0, 1, 11};
  for (const Dataset& d : {ByteSet(12, 37), FloatSet(12, 37)}) {
    for (const Scaling& s : {ConstantScaling(255.0f), FitStandardize(d)}) {
      std::vector<float> x(rows.size() * d.features, -1.0f), y(rows.size(), -1.0f);
      GatherBatch(d, s, rows, x.data(), y.data());
      ExpectGathered(d, s, rows, x, y);
    }
  }
}

BOOST_AUTO_TEST_CASE(gather_writes_only_its_batch) {
  const Dataset d = ByteSet(4, 3);
  std::vector<float> x(3 * 3 + 1, 42.0f), y(3 + 1, 42.0f);
  const std::vector<std::uint32_t> rows = {3, 1, 2};
  GatherBatch(d, ConstantScaling(1.0f), rows, x.data(), y.data());
  BOOST_TEST(x.back() == 42.0f);
  BOOST_TEST(y.back() == 42.0f);
  BOOST_TEST(x[0] == 21.0f);  // (7 * 3 + 3 * 0) % 256
}

BOOST_AUTO_TEST_CASE(standardize_has_population_statistics_and_guards_constant_features) {
  Dataset d;
  d.rows = 4;
  d.features = 2;
  d.floats = {1, 5, 2, 5, 3, 5, 6, 5};  // column 0: 1 2 3 6; column 1 constant
  d.labels = {0, 0, 0, 0};
  const Scaling s = FitStandardize(d);
  BOOST_TEST((s.kind == Scaling::Kind::kStandardize));
  BOOST_TEST(s.mean[0] == 3.0f);
  BOOST_TEST(s.inv_std[0] == 1.0f / std::sqrt(3.5f), boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(s.mean[1] == 5.0f);
  BOOST_TEST(s.inv_std[1] == 1.0f);
  // Bytes and floats holding the same values give the same statistics.
  const Scaling from_bytes = FitStandardize(ByteSet(50, 9));
  const Scaling from_floats = FitStandardize(FloatSet(50, 9));
  BOOST_TEST(from_bytes.mean == from_floats.mean, boost::test_tools::per_element());
  BOOST_TEST(from_bytes.inv_std == from_floats.inv_std, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(standardize_uses_the_training_split_only) {
  auto [train, validation] = SplitValidation(ByteSet(200, 5), 0.25, 3);
  const Scaling s = FitStandardize(train);
  const Scaling all = FitStandardize(ByteSet(200, 5));
  for (std::size_t j = 0; j < 5; ++j) {
    double sum = 0.0;
    for (std::size_t r = 0; r < train.rows; ++r) sum += Feature(train, r, j);
    BOOST_TEST(s.mean[j] == sum / train.rows, boost::test_tools::tolerance(1e-5));
  }
  BOOST_TEST(s.mean != all.mean);
  // Training batches come out standardised: mean 0, standard deviation 1 per feature.
  std::vector<std::uint32_t> rows(train.rows);
  std::iota(rows.begin(), rows.end(), 0u);
  std::vector<float> x(train.rows * 5), y(train.rows);
  GatherBatch(train, s, rows, x.data(), y.data());
  for (std::size_t j = 0; j < 5; ++j) {
    double sum = 0.0, sum_sq = 0.0;
    for (std::size_t r = 0; r < train.rows; ++r) {
      sum += x[r * 5 + j];
      sum_sq += x[r * 5 + j] * x[r * 5 + j];
    }
    BOOST_TEST(std::abs(sum / train.rows) < 1e-4);
    BOOST_TEST(sum_sq / train.rows == 1.0, boost::test_tools::tolerance(1e-4));
  }
}

BOOST_AUTO_TEST_CASE(split_partitions_rows_and_keeps_them_intact) {
  for (const Dataset& original : {ByteSet(101, 3), FloatSet(101, 3)}) {
    auto [train, validation] = SplitValidation(original, 0.2, 9);
    BOOST_TEST(validation.rows == 20u);  // round(0.2 * 101)
    BOOST_TEST(train.rows == 81u);
    BOOST_TEST(train.labels.size() == 81u);
    BOOST_TEST(validation.labels.size() == 20u);
    BOOST_TEST(train.stored_as_bytes() == original.stored_as_bytes());
    BOOST_TEST(validation.stored_as_bytes() == original.stored_as_bytes());
    BOOST_TEST(train.FeatureBytes() + validation.FeatureBytes() == original.FeatureBytes());
    BOOST_TEST(validation.num_classes == 4);
    BOOST_TEST(train.num_classes == 4);
    // Every original row appears exactly once, whole, with its label, in ascending order.
    std::vector<int> seen(original.rows, 0);
    for (const Dataset* part : {&train, &validation}) {
      std::size_t previous = 0;
      for (std::size_t r = 0; r < part->rows; ++r) {
        // Column 0 holds 7 * id mod 256, and 183 is the inverse of 7 modulo 256.
        const std::size_t id = static_cast<std::size_t>(Feature(*part, r, 0)) * 183 % 256;
        BOOST_TEST_REQUIRE(id < original.rows);
        BOOST_TEST((r == 0 || id > previous));
        previous = id;
        ++seen[id];
        for (std::size_t j = 0; j < 3; ++j)
          BOOST_TEST(Feature(*part, r, j) == Feature(original, id, j));
        BOOST_TEST(part->labels[r] == original.labels[id]);
      }
    }
    for (int n : seen) BOOST_TEST(n == 1);
  }
}

BOOST_AUTO_TEST_CASE(split_is_deterministic_by_seed) {
  const auto [train_a, val_a] = SplitValidation(ByteSet(30, 2), 0.3, 1);
  const auto [train_b, val_b] = SplitValidation(ByteSet(30, 2), 0.3, 1);
  const auto [train_c, val_c] = SplitValidation(ByteSet(30, 2), 0.3, 2);
  BOOST_TEST(val_a.bytes == val_b.bytes);
  BOOST_TEST(train_a.bytes == train_b.bytes);
  BOOST_TEST(val_a.bytes != val_c.bytes);
}

BOOST_AUTO_TEST_CASE(split_fraction_edges) {
  auto [all, none] = SplitValidation(ByteSet(10, 2), 0.0, 1);
  BOOST_TEST(all.rows == 10u);
  BOOST_TEST(none.rows == 0u);
  BOOST_TEST(none.labels.empty());
  auto [empty, everything] = SplitValidation(ByteSet(10, 2), 1.5, 1);  // clamped to 1
  BOOST_TEST(empty.rows == 0u);
  BOOST_TEST(everything.rows == 10u);
  BOOST_TEST(everything.bytes.size() == 20u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace dataset_test
}  // namespace dtrain::data
