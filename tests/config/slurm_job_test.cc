// A job placed by Slurm: cluster.scheduler and the [slurm] keys resolved and written back, and
// each wrong value refused at its place with what is allowed — a time Slurm would not take, an
// option dtrain sets itself, [slurm] keys without the scheduler, hosts or placement with it.
#include <boost/test/unit_test.hpp>
#include <string>

#include "config/diagnostic_checks.h"
#include "config/job_file.h"

namespace dtrain::config {
namespace slurm_job_test {

using testing::CheckDiagnostics;

constexpr const char* kData = "[data]\nformat = \"synthetic\"\n";

LoadResult Parse(const std::string& text) { return ParseJobText(text, "inline.toml", {}, "/"); }

BOOST_AUTO_TEST_SUITE(slurm_job)

BOOST_AUTO_TEST_CASE(a_slurm_job_resolves_and_round_trips) {
  const LoadResult r = Parse(std::string(kData) +
                             "[cluster]\nworkers = 2\nmode = \"sync\"\nscheduler = \"slurm\"\n"
                             "[slurm]\npartition = \"gpu-a100\"\naccount = \"lab.ml\"\n"
                             "time_limit = \"1-12:00:00\"\nqos = \"normal\"\n"
                             "options = [\"--constraint=avx512\", \"--exclusive\"]\n");
  for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(r.ok());
  const JobConfig& job = *r.job;
  BOOST_TEST((job.cluster.scheduler == Scheduler::kSlurm));
  BOOST_TEST(job.slurm.partition == "gpu-a100");
  BOOST_TEST(job.slurm.account == "lab.ml");
  BOOST_TEST(job.slurm.time_limit == "1-12:00:00");
  BOOST_TEST(job.slurm.qos == "normal");
  BOOST_TEST(job.slurm.options.size() == 2u);
  for (const ResolvedKeys keys : {ResolvedKeys::kAll, ResolvedKeys::kApplicable}) {
    const LoadResult back = ParseJobText(FormatResolvedJob(job, keys), "inline.toml", {}, "/");
    for (const Diagnostic& d : back.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
    BOOST_REQUIRE(back.ok());
    BOOST_TEST((*back.job == job));
  }
}

BOOST_AUTO_TEST_CASE(the_daemon_places_a_job_that_does_not_ask_for_slurm) {
  const LoadResult r = Parse(kData);
  BOOST_REQUIRE(r.ok());
  BOOST_TEST((r.job->cluster.scheduler == Scheduler::kDaemon));
  BOOST_TEST(FormatResolvedJob(*r.job).find("slurm") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(every_slurm_time_form_is_taken_and_others_refused) {
  for (const char* time : {"90", "90:30", "4:00:00", "2-12", "2-12:30", "2-12:30:15", "UNLIMITED"}) {
    const LoadResult r = Parse(std::string(kData) + "[cluster]\nscheduler = \"slurm\"\n[slurm]\n" +
                               "time_limit = \"" + time + "\"\n");
    BOOST_TEST(r.ok(), time);
  }
  for (const char* time : {"", "1h", "1:2:3:4", "-5", "2-", "1:xx"}) {
    CheckDiagnostics(Parse(std::string(kData) + "[cluster]\nscheduler = \"slurm\"\n[slurm]\n" +
                           "time_limit = \"" + time + "\"\n"),
                     {{"inline.toml", 6, 14, "slurm.time_limit", "must be a Slurm time"}});
  }
}

BOOST_AUTO_TEST_CASE(wrong_slurm_keys_are_refused_where_written) {
  CheckDiagnostics(
      Parse(std::string(kData) +
            "[cluster]\nscheduler = \"slurm\"\nhosts = [\"node1\"]\nplacement = \"spread\"\n"
            "[slurm]\npartition = \"a b\"\noptions = [\"--ntasks=4\", \"-c2\", \"exclusive\", 3]\n"),
      {{"inline.toml", 5, 9, "cluster.hosts", "Slurm chooses the nodes"},
       {"inline.toml", 6, 13, "cluster.placement", "Slurm chooses the nodes"},
       {"inline.toml", 8, 13, "slurm.partition", "must be a Slurm partition name"},
       {"inline.toml", 9, 12, "slurm.options", "dtrain sets --ntasks itself"},
       {"inline.toml", 9, 26, "slurm.options", "dtrain sets --cpus-per-task itself"},
       {"inline.toml", 9, 33, "slurm.options", "must be a salloc option"},
       {"inline.toml", 9, 46, "slurm.options", "must be a string"}});
  CheckDiagnostics(Parse(std::string(kData) + "[cluster]\nscheduler = \"pbs\"\n"),
                   {{"inline.toml", 4, 13, "cluster.scheduler", "daemon, slurm"}});
  CheckDiagnostics(Parse(std::string(kData) + "[slurm]\npartition = \"debug\"\n"),
                   {{"inline.toml", 4, 13, "slurm.partition", "only to jobs with cluster.scheduler"}});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace slurm_job_test
}  // namespace dtrain::config
