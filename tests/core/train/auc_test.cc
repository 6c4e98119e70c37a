// AUC by ranks, against cases counted by hand (pairs of positive and negative rows).
#include "core/train/auc.h"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <vector>

namespace dtrain::train {
namespace auc_test {

BOOST_AUTO_TEST_SUITE(auc)

BOOST_AUTO_TEST_CASE(counts_the_pairs_in_order_with_ties_as_halves) {
  const std::vector<float> labels{0, 1, 0, 1};
  BOOST_TEST(Auc(std::vector<float>{0.1f, 0.9f, 0.2f, 0.8f}, labels) == 1.0);
  BOOST_TEST(Auc(std::vector<float>{0.9f, 0.1f, 0.8f, 0.2f}, labels) == 0.0);
  BOOST_TEST(Auc(std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f}, labels) == 0.5);
  // Positives 0.3 and 0.7, negatives 0.3 and 0.5. Pairs (pos, neg): (0.3, 0.3) tie 0.5,
  // (0.3, 0.5) 0, (0.7, 0.3) 1, (0.7, 0.5) 1: 2.5 of 4.
  BOOST_TEST(Auc(std::vector<float>{0.3f, 0.3f, 0.5f, 0.7f}, std::vector<float>{0, 1, 0, 1}) ==
             0.625);
  BOOST_TEST(std::isnan(Auc(std::vector<float>{0.1f, 0.2f}, std::vector<float>{1, 1})));
}

// A diverged model's NaN scores give an undefined area, not a hang (the tie scan never advanced
// past a NaN) nor a number.
BOOST_AUTO_TEST_CASE(a_nan_score_makes_the_area_nan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  BOOST_TEST(std::isnan(Auc(std::vector<float>{0.1f, nan, 0.2f, 0.8f},
                            std::vector<float>{0, 1, 0, 1})));
  BOOST_TEST(std::isnan(Auc(std::vector<float>{nan, nan}, std::vector<float>{0, 1})));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace auc_test
}  // namespace dtrain::train
