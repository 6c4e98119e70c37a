#include "config/resume_settings.h"

#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

namespace dtrain::config {
namespace resume_settings_test {

constexpr const char* kJob = R"(name = "r"
[data]
format = "synthetic"
[model]
type = "mlp"
hidden = [8]
[train]
epochs = 5
batch_size = 16
[optimizer]
type = "adam"
lr = 0.001
)";

// The job resolved and recorded, as a store holds it.
std::string Recorded() {
  LoadResult loaded = ParseJobText(kJob, "job.toml", {}, "/");
  BOOST_REQUIRE(loaded.ok());
  return FormatResolvedJob(*loaded.job);
}

BOOST_AUTO_TEST_SUITE(resume_settings)

BOOST_AUTO_TEST_CASE(what_may_change_is_applied_and_recorded) {
  const LoadResult r = ApplyResumeSettings(
      Recorded(), "job 4",
      {"train.epochs=2", "optimizer.lr=0.01", "optimizer.schedule=step", "checkpoint.keep=1"});
  BOOST_REQUIRE(r.ok());
  BOOST_TEST(r.job->train.epochs == 2);
  BOOST_TEST(r.job->train.schedule.lr == 0.01f);
  BOOST_TEST(r.job->checkpoint.keep == 1);
  BOOST_TEST(r.job->train.batch_size == 16);  // the rest as recorded
  // The new job file parses back to the same job.
  const LoadResult again = ParseJobText(FormatResolvedJob(*r.job), "job 4", {}, "/");
  BOOST_REQUIRE(again.ok());
  BOOST_TEST(again.job->train.epochs == 2);
  BOOST_TEST(ResumeSettingsReason({"train.epochs=2", "optimizer.lr=0.01"}) ==
             "resumed with train.epochs=2, optimizer.lr=0.01");
}

BOOST_AUTO_TEST_CASE(every_other_key_is_refused_by_name_listing_what_may_change) {
  const LoadResult r = ApplyResumeSettings(
      Recorded(), "job 4",
      {"train.epochs=2", "train.batch_size=32", " model.hidden = [4]", "train = {seed = 3}",
       "no_equals"});
  BOOST_REQUIRE(!r.ok());
  BOOST_REQUIRE(r.diagnostics.size() == 4u);
  const std::vector<std::string> keys = {"train.batch_size", "model.hidden", "train",
                                         "no_equals"};
  for (std::size_t i = 0; i < keys.size(); ++i) {
    BOOST_TEST(r.diagnostics[i].file == "--set");
    BOOST_TEST(r.diagnostics[i].key == keys[i]);
    BOOST_TEST(r.diagnostics[i].message.find("what may change: " + ResumableKeyList()) !=
               std::string::npos);
  }
  BOOST_TEST(ResumableKeyList().find("optimizer.lr") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_resumable_key_is_validated_like_any_other) {
  const LoadResult r = ApplyResumeSettings(Recorded(), "job 4", {"train.epochs=-1"});
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.diagnostics.front().key == "train.epochs");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace resume_settings_test
}  // namespace dtrain::config
