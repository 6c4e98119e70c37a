// Global-norm clipping: the norm it reports, the norm it leaves, and when it must not touch grad.
#include "core/optim/clip.h"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <span>

#include "core/math/buffer.h"
#include "core/optim/test_util.h"

namespace dtrain::optim {
namespace clip_test {

using math::FloatBuffer;
namespace tt = boost::test_tools;

// n normal floats scaled so that their norm is about `norm`.
FloatBuffer RandomWithNorm(std::size_t n, double norm, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  FloatBuffer v(n);
  for (float& x : v) x = dist(rng) * static_cast<float>(norm / std::sqrt(static_cast<double>(n)));
  return v;
}

BOOST_AUTO_TEST_SUITE(optim)

// Blocks of 1024 are summed in float, the blocks in double: accurate to ~1e-7 relative.
BOOST_AUTO_TEST_CASE(global_norm_is_the_l2_norm) {
  const FloatBuffer pythagoras{3.0f, 4.0f};
  BOOST_TEST(GlobalNorm(pythagoras) == 5.0);
  BOOST_TEST(GlobalNorm({}) == 0.0);

  const FloatBuffer g = RandomWithNorm(100'003, 10.0, 1);
  double sum = 0;
  for (float x : g) sum += static_cast<double>(x) * x;
  BOOST_TEST(GlobalNorm(g) == std::sqrt(sum), tt::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(clipping_scales_grad_to_max_norm_and_returns_the_norm_before) {
  FloatBuffer g = RandomWithNorm(1001, 37.0, 2);
  const FloatBuffer before = g;
  const double norm_before = GlobalNorm(g);
  BOOST_TEST(ClipByGlobalNorm(g, 5.0f) == norm_before);
  BOOST_TEST(GlobalNorm(g) == 5.0, tt::tolerance(1e-6));
  // One factor for every element: the direction is kept.
  const double factor = 5.0 / norm_before;
  for (std::size_t i = 0; i < g.size(); ++i) {
    BOOST_TEST(g[i] == before[i] * factor, tt::tolerance(1e-6));
  }
}

BOOST_AUTO_TEST_CASE(clipping_leaves_a_grad_within_max_norm_untouched) {
  FloatBuffer g = RandomWithNorm(1001, 3.0, 3);
  const FloatBuffer before = g;
  const double norm = GlobalNorm(g);
  BOOST_TEST(ClipByGlobalNorm(g, 5.0f) == norm);
  BOOST_TEST(BitEqual(g, before));
}

BOOST_AUTO_TEST_CASE(clipping_is_off_when_max_norm_is_not_positive) {
  for (float max_norm : {0.0f, -1.0f}) {
    FloatBuffer g = RandomWithNorm(100, 50.0, 4);
    const FloatBuffer before = g;
    BOOST_TEST(ClipByGlobalNorm(g, max_norm) == GlobalNorm(before));
    BOOST_TEST(BitEqual(g, before), "max_norm " << max_norm);
  }
}

BOOST_AUTO_TEST_CASE(clipping_leaves_a_non_finite_grad_for_the_caller_to_skip) {
  for (float bad : {std::numeric_limits<float>::infinity(), std::nanf("")}) {
    FloatBuffer g = RandomWithNorm(100, 50.0, 5);
    g[17] = bad;
    const FloatBuffer before = g;
    BOOST_TEST(!std::isfinite(ClipByGlobalNorm(g, 1.0f)));
    BOOST_TEST(BitEqual(g, before), "with " << bad);
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace clip_test
}  // namespace dtrain::optim
