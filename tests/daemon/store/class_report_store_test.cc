// The class_reports table: one final per-class report a job, replaced by a later one, read back
// with its ratios computed anew from the stored matrix, shown in the JOB object, refused when
// damaged, deleted with its job.
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "daemon/store/job_views.h"
#include "daemon/store/store.h"
#include "daemon/store/store_test_util.h"

namespace dtrain::store {
namespace class_report_store_test {

using testing::Contains;
using testing::OpenRaw;
using testing::OpenStore;
using testing::RunningJob;
using testing::TempStoreDir;

// Rows 0 0 1 1 2 2 predicted 0 1 1 1 1 1: class 2 is never predicted.
train::ClassReport SampleReport() {
  Result<train::ClassReport> r = train::ClassReportOf(std::vector<float>{0, 0, 1, 1, 2, 2},
                                                      std::vector<float>{0, 1, 1, 1, 1, 1}, 3);
  BOOST_REQUIRE(r.ok());
  return r.value();
}

BOOST_AUTO_TEST_SUITE(store_class_report)

BOOST_AUTO_TEST_CASE(a_job_keeps_its_last_report_and_reads_it_back_whole) {
  TempStoreDir dir;
  const std::string path = dir.Path("dtrain.db");
  auto store = OpenStore(path);
  const std::int64_t id = RunningJob(*store, "report");
  const std::int64_t other = RunningJob(*store, "other");
  BOOST_TEST(!store->FinalClassReport(id).value().has_value());
  BOOST_TEST(StoredJobJson(*store, id, false).value()["class_report"].is_null());

  Result<train::ClassReport> first =
      train::ClassReportOf(std::vector<float>{0, 1}, std::vector<float>{1, 1}, 2);
  BOOST_REQUIRE(store->SaveClassReport(id, 50, first.value()).ok());
  const train::ClassReport report = SampleReport();
  BOOST_REQUIRE(store->SaveClassReport(id, 120, report).ok());
  const std::optional<StoredClassReport> kept = store->FinalClassReport(id).value();
  BOOST_REQUIRE(kept.has_value());
  BOOST_TEST(kept->step == 120);
  BOOST_TEST(kept->time > 0);
  BOOST_TEST(kept->report.classes == 3);
  BOOST_TEST(kept->report.confusion == report.confusion, boost::test_tools::per_element());
  BOOST_TEST(kept->report.macro.f1 == report.macro.f1);
  BOOST_TEST(kept->report.per_class[2].precision == 0.0);
  BOOST_TEST(OpenRaw(path).QueryInt("SELECT count(*) FROM class_reports").value() == 1);
  BOOST_TEST(!store->FinalClassReport(other).value().has_value());

  // The JOB object carries it as eval --per-class --json prints it, with its step.
  const nlohmann::json shown = StoredJobJson(*store, id, false).value()["class_report"];
  BOOST_TEST(shown["step"] == 120);
  BOOST_TEST(shown["classes"] == 3);
  BOOST_TEST(shown["confusion"].dump() == "[[1,1,0],[0,2,0],[0,2,0]]");
  BOOST_TEST(shown["per_class"][1]["support"] == 2);
  BOOST_TEST(shown["micro"]["f1"] == 0.5);

  BOOST_REQUIRE(store->SetJobState(id, JobState::kCancelled, "test").ok());
  BOOST_REQUIRE(store->DeleteJob(id).ok());
  BOOST_TEST(OpenRaw(path).QueryInt("SELECT count(*) FROM class_reports").value() == 0);
}

BOOST_AUTO_TEST_CASE(a_damaged_one_is_an_error_naming_it) {
  TempStoreDir dir;
  const std::string path = dir.Path("dtrain.db");
  auto store = OpenStore(path);
  const std::int64_t id = RunningJob(*store, "damaged");
  BOOST_REQUIRE(store->SaveClassReport(id, 10, SampleReport()).ok());
  for (const char* damage : {"UPDATE class_reports SET confusion = '[[1,2],[3]]'",
                             "UPDATE class_reports SET confusion = '[[1,-2],[3,4]]'",
                             "UPDATE class_reports SET confusion = 'nonsense'",
                             "UPDATE class_reports SET classes = 4"}) {
    BOOST_REQUIRE(OpenRaw(path).Exec(damage).ok());
    Result<std::optional<StoredClassReport>> read = store->FinalClassReport(id);
    BOOST_REQUIRE_MESSAGE(!read.ok(), damage);
    BOOST_TEST(Contains(read.status().message(),
                        "job " + std::to_string(id) + "'s stored per-class report is damaged"),
               read.status().message());
  }
}

BOOST_AUTO_TEST_CASE(a_job_that_does_not_exist_keeps_none) {
  TempStoreDir dir;
  auto store = OpenStore(dir.Path("dtrain.db"));
  const Status saved = store->SaveClassReport(99, 10, SampleReport());
  BOOST_TEST(!saved.ok());
  BOOST_TEST(Contains(saved.message(), "job 99"), saved.message());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace class_report_store_test
}  // namespace dtrain::store
