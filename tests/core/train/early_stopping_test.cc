// EarlyStopping (core/train/early_stopping.h): what counts as an improvement in each direction,
// the min_delta boundary, patience counted in evaluations in a row, and a restored state judging
// as the uninterrupted run would.
#include "core/train/early_stopping.h"

#include <boost/test/unit_test.hpp>
#include <limits>

namespace dtrain::train {
namespace early_stopping_test {

using Verdict = EarlyStopping::Verdict;

EarlyStopping Rule(EarlyStoppingMetric metric, std::int64_t patience, double min_delta) {
  return EarlyStopping({metric, patience, min_delta});
}

BOOST_AUTO_TEST_SUITE(early_stopping)

BOOST_AUTO_TEST_CASE(loss_improves_downward_and_accuracy_upward) {
  EarlyStopping loss = Rule(EarlyStoppingMetric::kEvalLoss, 2, 0.0);
  BOOST_TEST((loss.Observe(1.0, 10) == Verdict::kImproved));  // the first value is the best
  BOOST_TEST((loss.Observe(0.5, 20) == Verdict::kImproved));
  BOOST_TEST((loss.Observe(0.7, 30) == Verdict::kNotImproved));
  BOOST_TEST(loss.state().best == 0.5);
  BOOST_TEST(loss.state().best_step == 20);
  BOOST_TEST(loss.state().since_best == 1);

  EarlyStopping accuracy = Rule(EarlyStoppingMetric::kEvalAccuracy, 2, 0.0);
  BOOST_TEST((accuracy.Observe(0.5, 10) == Verdict::kImproved));
  BOOST_TEST((accuracy.Observe(0.4, 20) == Verdict::kNotImproved));
  BOOST_TEST((accuracy.Observe(0.6, 30) == Verdict::kImproved));  // the count starts over
  BOOST_TEST(accuracy.state().best == 0.6);
  BOOST_TEST(accuracy.state().best_step == 30);
  BOOST_TEST(accuracy.state().since_best == 0);
}

BOOST_AUTO_TEST_CASE(an_improvement_must_exceed_min_delta) {
  // Values exact in binary, so the boundary is the rule's and not rounding's.
  EarlyStopping loss = Rule(EarlyStoppingMetric::kEvalLoss, 5, 0.25);
  loss.Observe(2.0, 1);
  BOOST_TEST((loss.Observe(1.75, 2) == Verdict::kNotImproved));  // exactly min_delta: not more
  BOOST_TEST((loss.Observe(1.5, 3) == Verdict::kImproved));
  BOOST_TEST(loss.state().best == 1.5);

  EarlyStopping accuracy = Rule(EarlyStoppingMetric::kEvalAccuracy, 5, 0.125);
  accuracy.Observe(0.5, 1);
  BOOST_TEST((accuracy.Observe(0.625, 2) == Verdict::kNotImproved));
  BOOST_TEST((accuracy.Observe(0.75, 3) == Verdict::kImproved));
  // An equal value never improves, even with min_delta 0.
  EarlyStopping flat = Rule(EarlyStoppingMetric::kEvalLoss, 5, 0.0);
  flat.Observe(1.0, 1);
  BOOST_TEST((flat.Observe(1.0, 2) == Verdict::kNotImproved));
}

BOOST_AUTO_TEST_CASE(patience_evaluations_in_a_row_without_improvement_stop) {
  EarlyStopping rule = Rule(EarlyStoppingMetric::kEvalLoss, 3, 0.0);
  rule.Observe(1.0, 100);
  BOOST_TEST((rule.Observe(1.0, 200) == Verdict::kNotImproved));
  BOOST_TEST((rule.Observe(1.5, 300) == Verdict::kNotImproved));
  BOOST_TEST((rule.Observe(1.0, 400) == Verdict::kStop));
  BOOST_TEST(rule.Describe(400) ==
             "stopped early at step 400: best eval_loss 1 at step 100, no improvement by more "
             "than min_delta in 3 evaluations since");
  // patience 1: the first evaluation that does not improve stops.
  EarlyStopping eager = Rule(EarlyStoppingMetric::kEvalAccuracy, 1, 0.0);
  eager.Observe(0.5, 1);
  BOOST_TEST((eager.Observe(0.5, 2) == Verdict::kStop));
}

BOOST_AUTO_TEST_CASE(patience_zero_judges_but_never_stops) {
  EarlyStopping keep = Rule(EarlyStoppingMetric::kEvalAccuracy, 0, 0.0);
  BOOST_TEST(!keep.options().enabled());
  BOOST_TEST((keep.Observe(0.5, 10) == Verdict::kImproved));
  for (std::int64_t step = 20; step <= 100; step += 10) {
    BOOST_TEST((keep.Observe(0.25, step) == Verdict::kNotImproved));
  }
  BOOST_TEST((keep.Observe(0.75, 110) == Verdict::kImproved));
  BOOST_TEST(keep.state().best_step == 110);
}

BOOST_AUTO_TEST_CASE(a_non_finite_value_never_improves) {
  EarlyStopping rule = Rule(EarlyStoppingMetric::kEvalLoss, 2, 0.0);
  BOOST_TEST((rule.Observe(std::numeric_limits<double>::quiet_NaN(), 1) == Verdict::kNotImproved));
  BOOST_TEST(rule.state().best_step == -1);
  BOOST_TEST((rule.Observe(std::numeric_limits<double>::infinity(), 2) == Verdict::kStop));
  BOOST_TEST(rule.Describe(2) == "stopped early at step 2: no finite eval_loss in 2 evaluations");
}

BOOST_AUTO_TEST_CASE(a_restored_state_judges_as_the_uninterrupted_run) {
  const double values[] = {0.9, 0.8, 0.85, 0.82, 0.81, 0.95};
  EarlyStopping whole = Rule(EarlyStoppingMetric::kEvalLoss, 4, 0.0);
  EarlyStopping first = Rule(EarlyStoppingMetric::kEvalLoss, 4, 0.0);
  for (int i = 0; i < 3; ++i) {
    whole.Observe(values[i], i);
    first.Observe(values[i], i);
  }
  EarlyStopping resumed = Rule(EarlyStoppingMetric::kEvalLoss, 4, 0.0);
  resumed.Restore(first.state());
  for (int i = 3; i < 6; ++i) {
    const Verdict expected = whole.Observe(values[i], i);
    BOOST_TEST((resumed.Observe(values[i], i) == expected));
  }
  BOOST_TEST((resumed.state() == whole.state()));
  BOOST_TEST(resumed.state().since_best == 4);
  BOOST_TEST(resumed.state().best_step == 1);
}

BOOST_AUTO_TEST_CASE(metric_names_round_trip) {
  for (EarlyStoppingMetric m :
       {EarlyStoppingMetric::kEvalAccuracy, EarlyStoppingMetric::kEvalLoss}) {
    BOOST_TEST((ParseEarlyStoppingMetric(EarlyStoppingMetricName(m)).value() == m));
  }
  BOOST_TEST(!ParseEarlyStoppingMetric("eval_auc").ok());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace early_stopping_test
}  // namespace dtrain::train
