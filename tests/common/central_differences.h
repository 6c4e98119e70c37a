// Gradient checks by central differences: each value nudged by +-step, the loss evaluated again,
// and the slope (up - down) / (2 step) compared with the analytic gradient within
// abs + rel * |slope|. A failure names the value and both numbers.
//
//   CheckCentralDifferences(params, grad, [&] { return MeanLoss(); }, {.what = "slot"});
//
// The loss must read `values` (it is called with one of them moved); the values are restored.
#pragma once

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstddef>
#include <functional>
#include <span>

namespace dtrain::testing {

struct DifferenceCheck {
  float step = 1e-2f;
  double abs = 1e-3, rel = 1e-2;
  const char* what = "param";
};

inline void CheckCentralDifferences(std::span<float> values, std::span<const float> analytic,
                                    const std::function<double()>& loss,
                                    const DifferenceCheck& c = {}) {
  BOOST_TEST_REQUIRE(values.size() == analytic.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float saved = values[i];
    values[i] = saved + c.step;
    const double up = loss();
    values[i] = saved - c.step;
    const double down = loss();
    values[i] = saved;
    const double numeric = (up - down) / (2.0 * c.step);
    BOOST_TEST(std::fabs(analytic[i] - numeric) <= c.abs + c.rel * std::fabs(numeric),
               c.what << "[" << i << "]: analytic " << analytic[i] << " vs numeric " << numeric);
  }
}

}  // namespace dtrain::testing
