// FTRL-Proximal per coordinate (core/optim/ftrl.h) on steps checked by hand, L1 holding a weight
// at exactly 0, and the dense optimizer entering FTRL at its initial parameters.
#include "core/optim/ftrl.h"

#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/optim/optimizer.h"

namespace dtrain::optim {
namespace ftrl_test {

BOOST_AUTO_TEST_SUITE(ftrl)

// alpha 0.5, beta 1, l1 0.1, l2 0.2, from z = n = 0. By hand:
//   g = 0.6:   n = 0.36, sigma = 0.6 / 0.5 = 1.2, z = 0.6,
//              w = -(0.6 - 0.1) / ((1 + 0.6) / 0.5 + 0.2) = -0.5 / 3.4
//   g = -0.8:  n = 1, sigma = (1 - 0.6) / 0.5 = 0.8, z = 0.6 - 0.8 + 0.8 * 0.5 / 3.4
//              = -0.0823529..., |z| <= l1: w = 0
//   g = 0.05:  n = 1.0025, w was 0 so z = -0.0323529..., still inside l1: w = 0
//   g = -0.3:  n = 1.0925, z = -0.3323529..., w = 0.2323529... / ((1 + sqrt(1.0925)) / 0.5 + 0.2)
BOOST_AUTO_TEST_CASE(steps_checked_by_hand) {
  const FtrlRates r{.alpha = 0.5f, .beta = 1.0f, .l1 = 0.1f, .l2 = 0.2f};
  const std::vector<float> grads{0.6f, -0.8f, 0.05f, -0.3f};
  const std::vector<double> zs{0.6, -0.08235294117647063, -0.032352941176470626,
                               -0.33235294117647063};
  const std::vector<double> ns{0.36, 1.0, 1.0025, 1.0925};
  const std::vector<double> ws{-0.14705882352941174, 0.0, 0.0, 0.05415578731603073};
  float z = 0.0f, n = 0.0f, w = 0.0f;
  for (std::size_t t = 0; t < grads.size(); ++t) {
    BOOST_TEST_CONTEXT("step " << t + 1) {
      w = FtrlStep(grads[t], w, z, n, r);
      BOOST_TEST(z == zs[t], boost::test_tools::tolerance(1e-6));
      BOOST_TEST(n == ns[t], boost::test_tools::tolerance(1e-6));
      BOOST_TEST(w == ws[t], boost::test_tools::tolerance(1e-6));
      BOOST_TEST(w == FtrlWeight(z, n, r));
    }
  }
  BOOST_TEST(FtrlWeight(-0.0823f, 1.0f, r) == 0.0f);  // L1 gives exactly 0, not a small number
}

BOOST_AUTO_TEST_CASE(the_state_of_a_weight_gives_that_weight_back_shrunk_by_l1_and_l2) {
  const FtrlRates plain{.alpha = 0.2f, .beta = 1.5f};
  const FtrlRates shrinking{.alpha = 0.2f, .beta = 1.5f, .l1 = 0.3f, .l2 = 0.1f};
  for (float w : {-2.0f, -0.01f, 0.0f, 0.4f, 3.0f}) {
    BOOST_TEST(FtrlWeight(FtrlStateOf(w, plain), 0.0f, plain) == w,
               boost::test_tools::tolerance(1e-6f));
    // beta / alpha = 7.5: |w| * 7.5 - 0.3 over 7.6, or 0 when |w| * 7.5 <= 0.3.
    const float shrunk = std::max(0.0f, std::fabs(w) * 7.5f - 0.3f) / 7.6f;
    BOOST_TEST(FtrlWeight(FtrlStateOf(w, shrinking), 0.0f, shrinking) == std::copysign(shrunk, w),
               boost::test_tools::tolerance(1e-6f));
  }
}

// The optimizer enters FTRL at the model's initial parameters: without L1 and L2 a zero gradient
// leaves them where they are, and a coordinate's step is FtrlStep's.
BOOST_AUTO_TEST_CASE(the_optimizer_starts_from_the_initial_parameters) {
  const OptimizerOptions o{.type = OptimizerType::kFtrl, .alpha = 0.2f, .beta = 1.0f};
  BOOST_TEST(ValidateOptimizerOptions(o).ok());
  auto opt = MakeOptimizer(o, 0, 3);
  std::vector<float> params{0.5f, -0.25f, 0.0f};
  const std::vector<float> initial = params;
  opt->Step(params, std::vector<float>{0.0f, 0.0f, 0.0f}, 123.0f);  // lr is not used
  for (std::size_t i = 0; i < 3; ++i) {
    BOOST_TEST(params[i] == initial[i], boost::test_tools::tolerance(1e-6f));
  }
  const FtrlRates r{o.alpha, o.beta, o.l1, o.l2};
  float z = opt->StateVectors()[0][1], n = opt->StateVectors()[1][1];
  const float expected = FtrlStep(0.7f, params[1], z, n, r);
  opt->Step(params, std::vector<float>{0.0f, 0.7f, 0.0f}, 0.0f);
  BOOST_TEST(params[1] == expected);
  BOOST_TEST(!ValidateOptimizerOptions({.type = OptimizerType::kFtrl, .beta = 0.0f}).ok());
  BOOST_TEST(!ValidateOptimizerOptions({.type = OptimizerType::kFtrl, .l1 = -1.0f}).ok());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ftrl_test
}  // namespace dtrain::optim
