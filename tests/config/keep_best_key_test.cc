// checkpoint.keep_best in a job file: the metric that judges a job's best model, read and
// written back; train.early_stopping keeps one by its own metric; both with different metrics,
// or a job whose evaluating process does not hold the whole model, refused at the key saying why.
#include <boost/test/unit_test.hpp>
#include <string>

#include "config/diagnostic_checks.h"
#include "config/job_file.h"

namespace dtrain::config {
namespace keep_best_key_test {

using testing::CheckDiagnostics;
using testing::MustParseInline;
using testing::ParseInline;

constexpr const char* kJob = "[data]\nformat = \"synthetic\"\n";
constexpr const char* kEarly =
    "[train]\nearly_stopping = { metric = \"eval_accuracy\", patience = 3 }\n";

BOOST_AUTO_TEST_SUITE(keep_best_key)

BOOST_AUTO_TEST_CASE(off_by_default_and_read_and_written_back) {
  const JobConfig off = MustParseInline(kJob);
  BOOST_TEST(!off.checkpoint.keep_best.has_value());
  BOOST_TEST(!BestModelMetric(off).has_value());
  BOOST_TEST(FormatResolvedJob(off, ResolvedKeys::kAll).find("keep_best") == std::string::npos);

  const JobConfig job =
      MustParseInline(std::string(kJob) + "[checkpoint]\nkeep_best = \"eval_loss\"\n");
  BOOST_TEST((job.checkpoint.keep_best == train::EarlyStoppingMetric::kEvalLoss));
  BOOST_TEST((BestModelMetric(job) == train::EarlyStoppingMetric::kEvalLoss));
  const std::string text = FormatResolvedJob(job, ResolvedKeys::kApplicable);
  BOOST_TEST(text.find("\nkeep_best = \"eval_loss\"\n") != std::string::npos, text);
  BOOST_TEST((MustParseInline(text) == job));
}

BOOST_AUTO_TEST_CASE(early_stopping_keeps_the_best_by_its_metric) {
  const JobConfig early = MustParseInline(std::string(kJob) + kEarly);
  BOOST_TEST((BestModelMetric(early) == train::EarlyStoppingMetric::kEvalAccuracy));
  const JobConfig same =
      MustParseInline(std::string(kJob) + kEarly + "[checkpoint]\nkeep_best = \"eval_accuracy\"\n");
  BOOST_TEST((BestModelMetric(same) == train::EarlyStoppingMetric::kEvalAccuracy));
}

BOOST_AUTO_TEST_CASE(another_metric_than_early_stoppings_is_refused_naming_both_keys) {
  CheckDiagnostics(
      ParseInline(std::string(kJob) + kEarly + "[checkpoint]\nkeep_best = \"eval_loss\"\n"),
      {{"inline.toml", 6, 13, "checkpoint.keep_best",
        "= \"eval_loss\" conflicts with train.early_stopping's metric \"eval_accuracy\""}});
}

BOOST_AUTO_TEST_CASE(an_unknown_metric_is_refused_with_the_choices) {
  CheckDiagnostics(ParseInline(std::string(kJob) + "[checkpoint]\nkeep_best = \"eval_auc\"\n"),
                   {{"inline.toml", 4, 13, "checkpoint.keep_best",
                     "must be one of: eval_accuracy, eval_loss; got \"eval_auc\""}});
  CheckDiagnostics(ParseInline(std::string(kJob) + "[checkpoint]\nkeep_best = true\n"),
                   {{"inline.toml", 4, 13, "checkpoint.keep_best", "eval_accuracy, eval_loss"}});
}

BOOST_AUTO_TEST_CASE(a_job_whose_evaluation_it_cannot_keep_is_refused_saying_why) {
  const std::string key = "[checkpoint]\nkeep_best = \"eval_accuracy\"\n";
  CheckDiagnostics(
      ParseInline("[data]\nformat = \"synthetic\"\n[model]\ntype = \"mlp\"\nhidden = [8, 8]\n"
                  "[cluster]\nmode = \"single\"\nmodel_parallel = 2\n" +
                  key),
      {{"inline.toml", 10, 13, "checkpoint.keep_best",
        "is not available with cluster.model_parallel > 1"}});
  CheckDiagnostics(
      ParseInline("[data]\nformat = \"synthetic\"\ntest_rows = 0\n" + key),
      {{"inline.toml", 5, 13, "checkpoint.keep_best", "needs held-out data to evaluate on"}});
  CheckDiagnostics(ParseInline("[data]\nformat = \"synthetic\"\nsynthetic = \"linear\"\n[model]\n"
                               "type = \"mlp\"\n" +
                               key),
                   {{"inline.toml", 7, 13, "checkpoint.keep_best",
                     "metric \"eval_accuracy\" needs a classification model"}});
  const std::string sparse_async =
      "[data]\nformat = \"libsvm\"\nsparse = true\ntrain = \"files/a1a.libsvm\"\n"
      "validation_fraction = 0.1\n[cluster]\nmode = \"async\"\nworkers = 2\n" +
      key;
  CheckDiagnostics(
      ParseJobText(sparse_async, "inline.toml", {}, (testing::TestData() / "jobs").string()),
      {{"inline.toml", 10, 13, "checkpoint.keep_best",
        "is not available for a sparse model in cluster.mode = \"async\""}});
}

// The process that evaluates holds the whole model it judged: a sparse model's in one process
// or, in sync mode, on shards that wait for replica 0's next push; L-BFGS's x in one process or
// gathered to Sandblaster's coordinator.
BOOST_AUTO_TEST_CASE(sparse_and_lbfgs_jobs_keep_one) {
  const std::string key = "[checkpoint]\nkeep_best = \"eval_accuracy\"\n";
  const std::string sparse =
      "[data]\nformat = \"libsvm\"\nsparse = true\ntrain = \"files/a1a.libsvm\"\n"
      "validation_fraction = 0.1\n" +
      key;
  for (const std::string cluster :
       {"", "[cluster]\nmode = \"sync\"\nallreduce = \"ps\"\nworkers = 2\n"}) {
    const LoadResult r =
        ParseJobText(sparse + cluster, "inline.toml", {}, (testing::TestData() / "jobs").string());
    for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
    BOOST_REQUIRE_MESSAGE(r.ok(), cluster);
    BOOST_TEST((BestModelMetric(*r.job) == train::EarlyStoppingMetric::kEvalAccuracy), cluster);
  }
  for (const std::string cluster :
       {"", "[cluster]\nmode = \"sandblaster\"\nworkers = 2\nservers = 2\n"}) {
    const JobConfig job =
        MustParseInline(std::string(kJob) + "[optimizer]\ntype = \"lbfgs\"\n" + cluster + key);
    BOOST_TEST((BestModelMetric(job) == train::EarlyStoppingMetric::kEvalAccuracy), cluster);
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace keep_best_key_test
}  // namespace dtrain::config
