// train.early_stopping in a job file: an inline table { metric, patience, min_delta } read and
// written back; every key's refusal at its place with what is allowed; and the job held against
// it (held-out data, a classification model for eval_accuracy), refused at the key; sparse and
// L-BFGS jobs take it. It is not among the keys a resume may change (its state continues in the
// checkpoint).
#include <boost/test/unit_test.hpp>
#include <string>
#include <utility>
#include <vector>

#include "config/diagnostic_checks.h"
#include "config/job_file.h"
#include "config/resume_settings.h"

namespace dtrain::config {
namespace early_stopping_key_test {

using testing::CheckDiagnostics;
using testing::MustParseInline;
using testing::ParseInline;

constexpr const char* kJob = "[data]\nformat = \"synthetic\"\n[train]\n";

BOOST_AUTO_TEST_SUITE(early_stopping_key)

BOOST_AUTO_TEST_CASE(off_by_default_and_read_and_written_back) {
  const JobConfig off = MustParseInline(kJob);
  BOOST_TEST(!off.train.early_stopping.enabled());
  BOOST_TEST(FormatResolvedJob(off, ResolvedKeys::kAll).find("early_stopping") ==
             std::string::npos);

  const JobConfig job = MustParseInline(
      std::string(kJob) +
      "early_stopping = { metric = \"eval_accuracy\", patience = 3, min_delta = 0.01 }\n");
  const train::EarlyStoppingOptions& e = job.train.early_stopping;
  BOOST_TEST(e.enabled());
  BOOST_TEST((e.metric == train::EarlyStoppingMetric::kEvalAccuracy));
  BOOST_TEST(e.patience == 3);
  BOOST_TEST(e.min_delta == 0.01);
  const std::string text = FormatResolvedJob(job, ResolvedKeys::kApplicable);
  BOOST_TEST(text.find("\nearly_stopping = { metric = \"eval_accuracy\", patience = 3, "
                       "min_delta = 0.01 }\n") != std::string::npos);
  const JobConfig back = MustParseInline(text);
  BOOST_TEST((back == job));
  // min_delta defaults to 0; eval_loss works for regression too.
  const JobConfig loss = MustParseInline(
      "[data]\nformat = \"synthetic\"\nsynthetic = \"linear\"\n[model]\ntype = \"mlp\"\n"
      "[train]\nearly_stopping = { metric = \"eval_loss\", patience = 1 }\n");
  BOOST_TEST(loss.train.early_stopping.min_delta == 0.0);
  BOOST_TEST((loss.train.early_stopping.metric == train::EarlyStoppingMetric::kEvalLoss));
}

BOOST_AUTO_TEST_CASE(metric_and_patience_are_required) {
  CheckDiagnostics(ParseInline(std::string(kJob) + "early_stopping = { patience = 3 }\n"),
                   {{"inline.toml", 4, 18, "train.early_stopping.metric",
                     "is required: which evaluation to judge (eval_accuracy, eval_loss)"}});
  CheckDiagnostics(ParseInline(std::string(kJob) + "early_stopping = { metric = \"eval_loss\" }\n"),
                   {{"inline.toml", 4, 18, "train.early_stopping.patience", "an integer >= 1"}});
}

BOOST_AUTO_TEST_CASE(each_value_is_refused_at_its_place_with_what_is_allowed) {
  CheckDiagnostics(ParseInline(std::string(kJob) +
                               "early_stopping = { metric = \"eval_loss\", patience = 0 }\n"),
                   {{"inline.toml", 4, 53, "train.early_stopping.patience",
                     "must be an integer in [1, 1000000], got 0"}});
  CheckDiagnostics(
      ParseInline(std::string(kJob) + "early_stopping = { metric = \"eval_loss\", patience = 2, "
                                      "min_delta = -0.5 }\n"),
      {{"inline.toml", 4, 68, "train.early_stopping.min_delta", "-0.5"}});
  CheckDiagnostics(
      ParseInline(std::string(kJob) + "early_stopping = { metric = \"eval_auc\", patience = 2 }\n"),
      {{"inline.toml", 4, 29, "train.early_stopping.metric",
        "must be one of: eval_accuracy, eval_loss; got \"eval_auc\""}});
  CheckDiagnostics(ParseInline(std::string(kJob) + "early_stopping = 5\n"),
                   {{"inline.toml", 4, 18, "train.early_stopping", "must be an inline table"}});
}

BOOST_AUTO_TEST_CASE(an_unknown_inner_key_is_refused_with_the_closest_known_one) {
  CheckDiagnostics(ParseInline(std::string(kJob) +
                               "early_stopping = { metric = \"eval_loss\", patiense = 2 }\n"),
                   {{"inline.toml", 4, 18, "train.early_stopping.patience", "is required"},
                    {"inline.toml", 4, 42, "train.early_stopping.patiense", "patience"}});
}

BOOST_AUTO_TEST_CASE(a_job_it_cannot_judge_is_refused_at_the_key_saying_why) {
  const std::string key = "early_stopping = { metric = \"eval_accuracy\", patience = 2 }\n";
  CheckDiagnostics(
      ParseInline("[data]\nformat = \"synthetic\"\ntest_rows = 0\n[train]\n" + key),
      {{"inline.toml", 5, 18, "train.early_stopping", "needs held-out data to evaluate on"}});
  CheckDiagnostics(ParseInline("[data]\nformat = \"synthetic\"\nsynthetic = \"linear\"\n[model]\n"
                               "type = \"mlp\"\n[train]\n" +
                               key),
                   {{"inline.toml", 7, 18, "train.early_stopping",
                     "metric \"eval_accuracy\" needs a classification model"}});
  const std::string sparse =
      "[data]\nformat = \"libsvm\"\nsparse = true\ntrain = \"files/a1a.libsvm\"\n[train]\n" + key;
  CheckDiagnostics(
      ParseJobText(sparse, "inline.toml", {}, (testing::TestData() / "jobs").string()),
      {{"inline.toml", 6, 18, "train.early_stopping", "needs held-out data to evaluate on"}});
}

// Every training loop judges its evaluations: sparse models in every mode (in async mode each
// replica its own, keeping no best model), L-BFGS in one process and on Sandblaster.
BOOST_AUTO_TEST_CASE(sparse_and_lbfgs_jobs_take_it) {
  const std::string key = "early_stopping = { metric = \"eval_loss\", patience = 2 }\n";
  const std::string sparse =
      "[data]\nformat = \"libsvm\"\nsparse = true\ntrain = \"files/a1a.libsvm\"\n"
      "validation_fraction = 0.1\n[train]\n" +
      key;
  const std::string jobs = (testing::TestData() / "jobs").string();
  for (const auto& [cluster, keeps_best] : std::vector<std::pair<std::string, bool>>{
           {"", true},
           {"[cluster]\nmode = \"sync\"\nallreduce = \"ps\"\nworkers = 2\n", true},
           {"[cluster]\nmode = \"async\"\nworkers = 2\n", false}}) {
    const LoadResult r = ParseJobText(sparse + cluster, "inline.toml", {}, jobs);
    for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
    BOOST_REQUIRE_MESSAGE(r.ok(), cluster);
    BOOST_TEST(r.job->train.early_stopping.enabled());
    BOOST_TEST(BestModelMetric(*r.job).has_value() == keeps_best, cluster);
  }
  for (const std::string cluster :
       {"", "[cluster]\nmode = \"sandblaster\"\nworkers = 2\nservers = 2\n"}) {
    const JobConfig job =
        MustParseInline(std::string(kJob) + key + "[optimizer]\ntype = \"lbfgs\"\n" + cluster);
    BOOST_TEST((BestModelMetric(job) == train::EarlyStoppingMetric::kEvalLoss), cluster);
  }
}

BOOST_AUTO_TEST_CASE(a_resume_may_not_change_it) {
  const JobConfig job = MustParseInline(
      std::string(kJob) + "early_stopping = { metric = \"eval_loss\", patience = 2 }\n");
  const LoadResult r =
      ApplyResumeSettings(FormatResolvedJob(job), "job 1", {"train.early_stopping.patience=5"});
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.diagnostics.front().key == "train.early_stopping.patience");
  BOOST_TEST(r.diagnostics.front().message.find("cannot change when a job resumes") !=
             std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace early_stopping_key_test
}  // namespace dtrain::config
