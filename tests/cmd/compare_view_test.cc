// The pure parts of `dtrain compare`: a curve's final and best point by the metric's direction
// (the first of equal bests, a NaN never best while a number is), the comparison's JSON and
// table (settings as columns, or a table of their own when many).
#include "cmd/compare_view.h"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace dtrain::cli {
namespace compare_view_test {

using config::ParameterValue;
using config::SweepGoal;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Comparison TwoJobs() {
  Comparison c;
  c.metric = "eval_accuracy";
  c.goal = config::NaturalGoal(c.metric);
  c.jobs = {{12, "lr-small", "succeeded", 40, {{10, 0.5}, {20, 0.8}, {40, 0.7}}},
            {13, "lr-big", "failed", 20, {}}};
  c.differing["optimizer.lr"] = {ParameterValue{"0.01", "0.01", "0.01"},
                                 ParameterValue{"0.1", "0.1", "0.1"}};
  c.differing["train.seed"] = {std::nullopt, ParameterValue{"4", "4", "4"}};
  return c;
}

BOOST_AUTO_TEST_SUITE(compare_view)

BOOST_AUTO_TEST_CASE(the_best_point_follows_the_metrics_direction) {
  BOOST_TEST((config::NaturalGoal("eval_accuracy") == SweepGoal::kMax));
  BOOST_TEST((config::NaturalGoal("eval_auc") == SweepGoal::kMax));
  BOOST_TEST((config::NaturalGoal("eval_loss") == SweepGoal::kMin));
  BOOST_TEST((config::NaturalGoal("eval_mse") == SweepGoal::kMin));
  const Curve curve = {{1, 0.9}, {2, std::nan("")}, {3, 0.4}, {4, 0.6}, {5, 0.4}};
  const CurveSummary max = Summarize(curve, SweepGoal::kMax);
  BOOST_TEST(max.best_point->first == 1.0);
  BOOST_TEST(max.final_point->first == 5.0);
  const CurveSummary min = Summarize(curve, SweepGoal::kMin);
  BOOST_TEST(min.best_point->first == 3.0);  // the first of the two 0.4s
  BOOST_TEST(min.best_point->second == 0.4);
  const CurveSummary nans = Summarize({{1, std::nan("")}, {2, 0.3}}, SweepGoal::kMin);
  BOOST_TEST(nans.best_point->first == 2.0);
  const CurveSummary none = Summarize({}, SweepGoal::kMax);
  BOOST_TEST(!none.best_point.has_value());
  BOOST_TEST(!none.final_point.has_value());
}

BOOST_AUTO_TEST_CASE(json_holds_each_jobs_summary_and_the_differing_settings) {
  const nlohmann::json j = ComparisonJson(TwoJobs(), false);
  BOOST_TEST(j["metric"] == "eval_accuracy");
  BOOST_TEST(j["goal"] == "max");
  BOOST_REQUIRE(j["jobs"].size() == 2u);
  BOOST_TEST(j["jobs"][0]["id"] == 12);
  BOOST_TEST(j["jobs"][0]["final"] == 0.7);
  BOOST_TEST(j["jobs"][0]["best"] == 0.8);
  BOOST_TEST(j["jobs"][0]["best_step"] == 20);
  BOOST_TEST(!j["jobs"][0].contains("points"));
  BOOST_TEST(j["jobs"][1]["final"].is_null());
  BOOST_TEST(j["jobs"][1]["best_step"].is_null());
  BOOST_TEST(j["differing"]["optimizer.lr"] == nlohmann::json::parse("[0.01, 0.1]"));
  BOOST_TEST(j["differing"]["train.seed"] == nlohmann::json::parse("[null, 4]"));
  const nlohmann::json with_points = ComparisonJson(TwoJobs(), true);
  BOOST_TEST(with_points["jobs"][0]["points"] ==
             nlohmann::json::parse("[[10, 0.5], [20, 0.8], [40, 0.7]]"));
}

BOOST_AUTO_TEST_CASE(few_differing_settings_are_columns_many_a_table_of_their_own) {
  std::ostringstream few;
  PrintComparison(few, TwoJobs(), false);
  const std::vector<std::string> lines = Lines(few.str());
  BOOST_REQUIRE(lines.size() == 4u);
  BOOST_TEST(lines[0] == "eval_accuracy of 2 jobs (higher is better)");
  BOOST_TEST(Contains(lines[1], "optimizer.lr"));
  BOOST_TEST(Contains(lines[1], "train.seed"));
  BOOST_TEST(Contains(lines[2], "lr-small"));
  BOOST_TEST(Contains(lines[2], "0.8"));
  BOOST_TEST(Contains(lines[3], "0.1"));
  BOOST_TEST(lines[3].ends_with(" 4"));
  BOOST_TEST(lines[2].ends_with(" -"));  // job 12 has no train.seed

  Comparison many = TwoJobs();
  for (const char* key : {"a.b", "c.d", "e.f"}) {
    many.differing[key] = {ParameterValue{"1", "1", "1"}, std::nullopt};
  }
  std::ostringstream out;
  PrintComparison(out, many, false);
  const std::vector<std::string> table = Lines(out.str());
  BOOST_TEST(!Contains(table[1], "optimizer.lr"));
  // The jobs' 3 lines, a blank one, then SETTING JOB 12 JOB 13 and a row per key.
  BOOST_REQUIRE(table.size() == 1u + 3u + 1u + 1u + 5u);
  BOOST_TEST(Contains(table[5], "SETTING"));
  BOOST_TEST(Contains(table[5], "JOB 13"));

  Comparison same = TwoJobs();
  same.differing.clear();
  std::ostringstream none;
  PrintComparison(none, same, false);
  BOOST_TEST(Contains(none.str(), "the jobs' settings are the same"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace compare_view_test
}  // namespace dtrain::cli
