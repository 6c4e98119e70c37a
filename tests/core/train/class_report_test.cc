// ClassReportOf and ScoresOf against matrices and ratios counted by hand: a class never predicted
// and a class with no rows (both 0, as scikit-learn's zero_division=0), the averages, the
// refusals, a report rebuilt from its stored matrix, and its JSON.
#include "core/train/class_report.h"

#include <boost/test/unit_test.hpp>
#include <limits>
#include <string>
#include <vector>

namespace dtrain::train {
namespace class_report_test {

namespace tt = boost::test_tools;

ClassReport Report(const std::vector<float>& labels, const std::vector<float>& predictions,
                   int classes) {
  Result<ClassReport> r = ClassReportOf(labels, predictions, classes);
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  return r.value();
}

void CheckRefused(const std::vector<float>& labels, const std::vector<float>& predictions,
                  int classes, const std::string& fragment) {
  Result<ClassReport> r = ClassReportOf(labels, predictions, classes);
  BOOST_TEST_REQUIRE(!r.ok(), "accepted, expected: " + fragment);
  BOOST_TEST(r.status().message().find(fragment) != std::string::npos, r.status().message());
}

BOOST_AUTO_TEST_SUITE(class_report)

// Two rows of each of three classes; class 2 is never predicted.
//   true\pred  0  1  2
//   0          1  1  0
//   1          0  2  0
//   2          0  2  0
BOOST_AUTO_TEST_CASE(counts_the_matrix_and_a_class_never_predicted_scores_zero) {
  const ClassReport r = Report({0, 0, 1, 1, 2, 2}, {0, 1, 1, 1, 1, 1}, 3);
  BOOST_TEST(r.classes == 3);
  BOOST_TEST(r.confusion == (std::vector<std::int64_t>{1, 1, 0, 0, 2, 0, 0, 2, 0}),
             tt::per_element());
  BOOST_TEST(r.Count(2, 1) == 2);
  BOOST_TEST(r.Count(0, 0) == 1);
  BOOST_REQUIRE(r.per_class.size() == 3u);
  // Class 0: predicted once, rightly; one of its two rows found.
  BOOST_TEST(r.per_class[0].precision == 1.0);
  BOOST_TEST(r.per_class[0].recall == 0.5);
  BOOST_TEST(r.per_class[0].f1 == 2.0 / 3.0, tt::tolerance(1e-12));
  // Class 1: predicted five times, twice rightly; both its rows found.
  BOOST_TEST(r.per_class[1].precision == 0.4, tt::tolerance(1e-12));
  BOOST_TEST(r.per_class[1].recall == 1.0);
  BOOST_TEST(r.per_class[1].f1 == 4.0 / 7.0, tt::tolerance(1e-12));
  // Class 2: never predicted: precision 0 by definition, recall 0 of 2, F1 0.
  BOOST_TEST(r.per_class[2].precision == 0.0);
  BOOST_TEST(r.per_class[2].recall == 0.0);
  BOOST_TEST(r.per_class[2].f1 == 0.0);
  for (const ClassScores& c : r.per_class) BOOST_TEST(c.support == 2);
  BOOST_TEST(r.macro.precision == 1.4 / 3.0, tt::tolerance(1e-12));
  BOOST_TEST(r.macro.recall == 0.5, tt::tolerance(1e-12));
  BOOST_TEST(r.macro.f1 == 26.0 / 63.0, tt::tolerance(1e-12));
  BOOST_TEST(r.macro.support == 6);
  // Pooled: 3 of 6 rows right.
  BOOST_TEST(r.micro.precision == 0.5);
  BOOST_TEST(r.micro.recall == 0.5);
  BOOST_TEST(r.micro.f1 == 0.5);
  BOOST_TEST(r.micro.support == 6);
}

// A class of the model with no rows and no predictions scores 0 and still counts in the macro
// average (as scikit-learn's with labels=range(classes)).
BOOST_AUTO_TEST_CASE(a_class_without_rows_scores_zero_and_weighs_in_the_macro_average) {
  const ClassReport r = Report({0, 1, 1}, {0, 1, 1}, 3);
  BOOST_TEST(r.per_class[2].precision == 0.0);
  BOOST_TEST(r.per_class[2].recall == 0.0);
  BOOST_TEST(r.per_class[2].f1 == 0.0);
  BOOST_TEST(r.per_class[2].support == 0);
  BOOST_TEST(r.macro.precision == 2.0 / 3.0, tt::tolerance(1e-12));
  BOOST_TEST(r.macro.f1 == 2.0 / 3.0, tt::tolerance(1e-12));
  BOOST_TEST(r.micro.f1 == 1.0);
}

BOOST_AUTO_TEST_CASE(no_rows_give_zero_counts_and_zero_scores) {
  const ClassReport r = Report({}, {}, 2);
  BOOST_TEST(r.confusion == (std::vector<std::int64_t>{0, 0, 0, 0}), tt::per_element());
  BOOST_TEST(r.micro.precision == 0.0);
  BOOST_TEST(r.macro.f1 == 0.0);
}

BOOST_AUTO_TEST_CASE(refuses_labels_and_predictions_outside_the_classes) {
  CheckRefused({0, 3}, {0, 1}, 3, "row 1 has label 3");
  CheckRefused({0, 1}, {0, -1}, 3, "row 1 has prediction -1");
  CheckRefused({0.5f}, {0}, 3, "row 0 has label 0.5");
  CheckRefused({0}, {std::numeric_limits<float>::quiet_NaN()}, 3, "row 0 has prediction");
  CheckRefused({0, 1}, {0}, 3, "2 labels for 1 predictions");
  CheckRefused({0}, {0}, 1, "2 to 100 classes, not 1");
  CheckRefused({0}, {0}, kMaxReportClasses + 1, "not 101");
}

// A stored matrix gives back the report it came from; a damaged one is refused.
BOOST_AUTO_TEST_CASE(scores_of_a_stored_matrix_equal_the_report) {
  const ClassReport r = Report({0, 0, 1, 1, 2, 2, 2}, {0, 2, 1, 0, 2, 2, 1}, 3);
  Result<ClassReport> back = ScoresOf(r.confusion);
  BOOST_TEST_REQUIRE(back.ok(), back.status().message());
  BOOST_TEST(back.value().classes == 3);
  for (int c = 0; c < 3; ++c) {
    BOOST_TEST(back.value().per_class[c].f1 == r.per_class[c].f1);
    BOOST_TEST(back.value().per_class[c].support == r.per_class[c].support);
  }
  BOOST_TEST(back.value().macro.recall == r.macro.recall);
  BOOST_TEST(!ScoresOf({1, 2, 3, 4, 5}).ok());
  BOOST_TEST(!ScoresOf({1}).ok());
  BOOST_TEST(!ScoresOf({1, -2, 3, 4}).ok());
}

// The JSON form: the matrix row by row (true classes), each class's scores named.
BOOST_AUTO_TEST_CASE(json_holds_the_matrix_by_rows_and_named_scores) {
  const std::string json = ClassReportJson(Report({0, 0, 1, 1, 2, 2}, {0, 1, 1, 1, 1, 1}, 3));
  BOOST_TEST(json.find(R"("classes":3)") != std::string::npos, json);
  BOOST_TEST(json.find(R"("confusion":[[1,1,0],[0,2,0],[0,2,0]])") != std::string::npos, json);
  BOOST_TEST(json.find(R"({"class":2,"f1":0.0,"precision":0.0,"recall":0.0,"support":2})") !=
                 std::string::npos,
             json);
  BOOST_TEST(json.find(R"("micro":{"f1":0.5,"precision":0.5,"recall":0.5,"support":6})") !=
                 std::string::npos,
             json);
}

// The matrix's rows as JSON, the store's and the worker message's form, read back to the same
// report; rows that are no square matrix of counts are refused.
BOOST_AUTO_TEST_CASE(confusion_rows_read_back_and_bad_rows_are_refused) {
  const ClassReport r = Report({0, 0, 1, 1, 2, 2}, {0, 1, 1, 1, 1, 1}, 3);
  BOOST_TEST(ConfusionRowsJson(r) == "[[1,1,0],[0,2,0],[0,2,0]]");
  Result<ClassReport> back = ClassReportOfRows(ConfusionRowsJson(r));
  BOOST_TEST_REQUIRE(back.ok(), back.status().message());
  BOOST_TEST(back.value().confusion == r.confusion, tt::per_element());
  BOOST_TEST(back.value().macro.f1 == r.macro.f1);
  for (const char* bad : {"", "{}", "[[1,2],[3]]", "[[1,2],[3,\"4\"]]", "[[1,2],[3,4.5]]",
                          "[[1,-2],[3,4]]", "[[1]]", "[]"}) {
    BOOST_TEST(!ClassReportOfRows(bad).ok(), bad);
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace class_report_test
}  // namespace dtrain::train
