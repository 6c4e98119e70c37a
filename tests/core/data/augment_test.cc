// Augmentation: the crop shifts an image under zero padding, the flip mirrors it, and both are
// pure functions of the seed and the row.
#include "core/data/augment.h"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <numeric>
#include <vector>

namespace dtrain::data {
namespace augment_test {

constexpr ImageShape kShape{2, 5, 4};  // 2 channels, 5 rows, 4 columns
constexpr int kSize = 2 * 5 * 4;

std::vector<float> Images(int rows) {
  std::vector<float> x(static_cast<std::size_t>(rows) * kSize);
  std::iota(x.begin(), x.end(), 1.0f);  // no zeros: a zero is padding
  return x;
}

float At(const std::vector<float>& x, int row, int i, int j, int c) {
  return x[static_cast<std::size_t>(row) * kSize + static_cast<std::size_t>((i * 4 + j) * 2 + c)];
}

BOOST_AUTO_TEST_SUITE(augment)

BOOST_AUTO_TEST_CASE(flip_mirrors_each_row_and_keeps_channels) {
  const int rows = 64;
  const std::vector<float> before = Images(rows);
  std::vector<float> x = before, scratch(kSize);
  AugmentBatch({.flip = true}, kShape, x.data(), rows, 7, scratch.data());
  int flipped = 0;
  for (int r = 0; r < rows; ++r) {
    const bool mirrored = At(x, r, 0, 0, 0) == At(before, r, 0, 3, 0);
    flipped += mirrored;
    for (int i = 0; i < 5; ++i) {
      for (int j = 0; j < 4; ++j) {
        for (int c = 0; c < 2; ++c) {
          BOOST_TEST(At(x, r, i, j, c) == At(before, r, i, mirrored ? 3 - j : j, c));
        }
      }
    }
  }
  BOOST_TEST(flipped > 16);  // about half of 64
  BOOST_TEST(flipped < 48);
}

BOOST_AUTO_TEST_CASE(crop_shifts_under_zero_padding_and_repeats_with_the_seed) {
  const int rows = 64;
  const std::vector<float> before = Images(rows);
  std::vector<float> x = before, again = before, other = before, scratch(kSize);
  AugmentBatch({.crop_padding = 2}, kShape, x.data(), rows, 7, scratch.data());
  AugmentBatch({.crop_padding = 2}, kShape, again.data(), rows, 7, scratch.data());
  AugmentBatch({.crop_padding = 2}, kShape, other.data(), rows, 8, scratch.data());
  BOOST_TEST(x == again, boost::test_tools::per_element());
  BOOST_TEST((x != other));
  for (int r = 0; r < rows; ++r) {
    // Find the shift from any pixel that is not padding, then check every pixel against it.
    int dy = 99, dx = 99;
    for (int i = 0; i < 5 && dy == 99; ++i) {
      for (int j = 0; j < 4 && dy == 99; ++j) {
        const float v = At(x, r, i, j, 0);
        if (v == 0.0f) continue;
        const int index = static_cast<int>(v - 1.0f) - r * kSize;  // (si * 4 + sj) * 2
        dy = index / 8 - i;
        dx = index % 8 / 2 - j;
      }
    }
    BOOST_TEST_REQUIRE(dy != 99);
    BOOST_TEST((dy >= -2 && dy <= 2 && dx >= -2 && dx <= 2));
    for (int i = 0; i < 5; ++i) {
      for (int j = 0; j < 4; ++j) {
        const int si = i + dy, sj = j + dx;
        const bool inside = si >= 0 && si < 5 && sj >= 0 && sj < 4;
        for (int c = 0; c < 2; ++c) {
          BOOST_TEST(At(x, r, i, j, c) == (inside ? At(before, r, si, sj, c) : 0.0f));
        }
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace augment_test
}  // namespace dtrain::data
