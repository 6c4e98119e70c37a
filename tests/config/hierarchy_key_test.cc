// [cluster] hierarchy in a job file: "auto" by default, "flat" read and written back, shown only
// where it applies (sync replicas on the ring), and refused at its place, saying why, elsewhere or
// with a value it does not know.
#include <boost/test/unit_test.hpp>
#include <string>

#include "config/diagnostic_checks.h"
#include "config/job_file.h"

namespace dtrain::config {
namespace hierarchy_key_test {

using testing::CheckClusterWrittenBack;
using testing::CheckDiagnostics;
using testing::CheckNotWritten;
using testing::MustParseInline;
using testing::ParseInline;

constexpr const char* kData = "[data]\nformat = \"synthetic\"\n";
constexpr const char* kSync = "[cluster]\nworkers = 4\nmode = \"sync\"\n";

BOOST_AUTO_TEST_SUITE(hierarchy_key)

BOOST_AUTO_TEST_CASE(auto_by_default_and_flat_when_asked_both_round_trip) {
  BOOST_TEST((MustParseInline(std::string(kData) + kSync).cluster.hierarchy == Hierarchy::kAuto));
  for (const char* value : {"auto", "flat"}) {
    BOOST_TEST_CONTEXT(value) {
      const JobConfig job =
          MustParseInline(std::string(kData) + kSync + "hierarchy = \"" + value + "\"\n");
      BOOST_TEST(HierarchyName(job.cluster.hierarchy) == value);
      CheckClusterWrittenBack(job, "hierarchy = \"" + std::string(value) + "\"");
    }
  }
}

// Written elsewhere, even among every key, the key would be refused when read back.
BOOST_AUTO_TEST_CASE(not_written_where_it_does_not_apply) {
  for (const char* cluster : {"", "[cluster]\nworkers = 2\nmode = \"async\"\n",
                              "[cluster]\nworkers = 2\nmode = \"sync\"\nallreduce = \"ps\"\n"}) {
    BOOST_TEST_CONTEXT(cluster) {
      CheckNotWritten(MustParseInline(std::string(kData) + cluster), "hierarchy");
    }
  }
}

BOOST_AUTO_TEST_CASE(an_unknown_value_is_refused_with_the_choices) {
  CheckDiagnostics(
      ParseInline(std::string(kData) + kSync + "hierarchy = \"tree\"\n"),
      {{"inline.toml", 6, 13, "cluster.hierarchy", "must be one of: auto, flat; got \"tree\""}});
}

BOOST_AUTO_TEST_CASE(refused_where_replicas_do_not_sum_whole_gradients_on_the_ring) {
  const std::string says =
      "is \"flat\", but it says how the replicas of mode \"sync\" with allreduce \"ring\" and "
      "model_parallel = 1 sum their gradients: ";
  CheckDiagnostics(ParseInline(std::string(kData) + "[cluster]\nworkers = 2\nmode = \"local\"\n" +
                               "hierarchy = \"flat\"\n"),
                   {{"inline.toml", 6, 13, "cluster.hierarchy",
                     says + "mode \"local\" averages parameters, not gradients"}});
  CheckDiagnostics(
      ParseInline(std::string(kData) + kSync + "allreduce = \"ps\"\nhierarchy = \"auto\"\n"),
      {{"inline.toml", 7, 13, "cluster.hierarchy",
        "allreduce \"ps\" sums the gradients on parameter servers"}});
}

BOOST_AUTO_TEST_CASE(nothing_is_held_against_it_when_the_mode_failed_to_read) {
  CheckDiagnostics(ParseInline(std::string(kData) +
                               "[cluster]\nworkers = 2\nmode = \"synk\"\nhierarchy = \"flat\"\n"),
                   {{"inline.toml", 5, 8, "cluster.mode", "got \"synk\""}});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace hierarchy_key_test
}  // namespace dtrain::config
