// [cluster] backup_workers in a job file: 0 by default, read below the workers and written back
// where it applies (mode "sync" on one parameter server, whole replicas, uncompressed gradients),
// refused at its place, saying why, elsewhere.
#include <boost/test/unit_test.hpp>
#include <string>

#include "config/diagnostic_checks.h"
#include "config/job_file.h"

namespace dtrain::config {
namespace backup_workers_key_test {

using testing::CheckClusterWrittenBack;
using testing::CheckDiagnostics;
using testing::CheckNotWritten;
using testing::MustParseInline;
using testing::ParseInline;

constexpr const char* kData = "[data]\nformat = \"synthetic\"\n";
constexpr const char* kSyncPs = "[cluster]\nworkers = 3\nmode = \"sync\"\nallreduce = \"ps\"\n";
// Where ParseInline(kData + kModel + "[cluster]\n" + lines) puts the first of `lines`.
constexpr const char* kModel = "[model]\ntype = \"mlp\"\nhidden = [8]\n";
constexpr int kFirstClusterLine = 7;
constexpr int kValueColumn = 18;  // after "backup_workers = "

BOOST_AUTO_TEST_SUITE(backup_workers_key)

BOOST_AUTO_TEST_CASE(zero_by_default_and_written_back_where_it_applies) {
  const JobConfig job = MustParseInline(std::string(kData) + kSyncPs);
  BOOST_TEST(job.cluster.backup_workers == 0);
  BOOST_TEST(job.cluster.BackupWorkersApply());
  CheckClusterWrittenBack(job, "backup_workers = 0");
}

BOOST_AUTO_TEST_CASE(read_below_the_workers_and_written_back) {
  for (const int backups : {1, 2}) {
    BOOST_TEST_CONTEXT("backup_workers = " << backups) {
      const JobConfig job = MustParseInline(std::string(kData) + kSyncPs + "servers = 1\n" +
                                            "backup_workers = " + std::to_string(backups) + "\n");
      BOOST_TEST(job.cluster.backup_workers == backups);
      CheckClusterWrittenBack(job, "backup_workers = " + std::to_string(backups));
    }
  }
}

// Written elsewhere, even among every key, the key would be refused when read back.
BOOST_AUTO_TEST_CASE(not_written_where_it_does_not_apply) {
  for (const char* cluster :
       {"", "[cluster]\nworkers = 2\nmode = \"async\"\n", "[cluster]\nworkers = 2\nmode = \"sync\"\n",
        "[cluster]\nworkers = 2\nmode = \"sync\"\nallreduce = \"ps\"\nservers = 2\n",
        "[cluster]\nworkers = 2\nmode = \"sync\"\nallreduce = \"ps\"\ncompression = \"bf16\"\n"}) {
    BOOST_TEST_CONTEXT(cluster) {
      CheckNotWritten(MustParseInline(std::string(kData) + cluster), "backup_workers");
    }
  }
}

BOOST_AUTO_TEST_CASE(out_of_range_values_are_refused_at_the_key) {
  const int line = 7;  // after kData's two lines and kSyncPs's four
  CheckDiagnostics(ParseInline(std::string(kData) + kSyncPs + "backup_workers = -1\n"),
                   {{"inline.toml", line, kValueColumn, "cluster.backup_workers",
                     "must be an integer in [0, "}});
  CheckDiagnostics(ParseInline(std::string(kData) + kSyncPs + "backup_workers = 3\n"),
                   {{"inline.toml", line, kValueColumn, "cluster.backup_workers",
                     "is 3, but the job has only cluster.workers = 3: each step takes the first "
                     "workers - backup_workers gradients, at least one"}});
}

BOOST_AUTO_TEST_CASE(a_step_names_the_gradients_it_took_of_at_most_64_workers) {
  const std::string many =
      std::string(kData) + "[cluster]\nworkers = 65\nmode = \"sync\"\nallreduce = \"ps\"\n";
  CheckDiagnostics(ParseInline(many + "backup_workers = 1\n"),
                   {{"inline.toml", 7, kValueColumn, "cluster.backup_workers",
                     "is 1, but cluster.workers = 65: the parameter server names the replicas "
                     "each step took in one 64-bit mask, so backup workers need at most 64 "
                     "workers"}});
  BOOST_TEST(MustParseInline(many + "backup_workers = 0\n").cluster.backup_workers == 0);
  const std::string most =
      std::string(kData) + "[cluster]\nworkers = 64\nmode = \"sync\"\nallreduce = \"ps\"\n";
  BOOST_TEST(MustParseInline(most + "backup_workers = 63\n").cluster.backup_workers == 63);
}

BOOST_AUTO_TEST_CASE(refused_where_a_step_cannot_go_on_without_its_slowest) {
  const struct {
    std::string cluster;  // every line but backup_workers = 1
    int lines;
    std::string why;
  } cases[] = {
      {"workers = 3\nmode = \"sync\"\n", 2,
       "allreduce \"ring\" cannot finish a step before every replica has sent its part (each "
       "chunk passes through every replica), so it cannot go on without its slowest: backup "
       "workers need allreduce = \"ps\" (a ring job that loses a replica regroups instead: "
       "min_workers)"},
      {"workers = 3\nmode = \"sync\"\nallreduce = \"ps\"\nservers = 2\n", 4,
       "servers = 2: every shard would have to agree which replicas' gradients each step took, "
       "and a late replica could fetch ranges of different steps from different shards: backup "
       "workers need servers = 1"},
      {"workers = 3\nmode = \"sync\"\nallreduce = \"ps\"\ncompression = \"topk\"\n", 4,
       "cluster.compression \"topk\" keeps an error-feedback residual in each replica, which a "
       "dropped push would lose or count twice: backup workers need compression = \"none\""},
      {"workers = 3\nmode = \"sync\"\nallreduce = \"ps\"\ncompression = \"bf16\"\n", 4,
       "cluster.compression \"bf16\" keeps an error-feedback residual"},
      {"workers = 3\nmode = \"async\"\n", 2,
       "mode \"async\" pushes its gradients to parameter servers: backup workers are for the "
       "synchronous data-parallel step of mode \"sync\""},
      {"workers = 3\nmode = \"local\"\n", 2,
       "mode \"local\" averages parameters, not gradients: backup workers are for the "
       "synchronous data-parallel step of mode \"sync\""},
      {"workers = 3\nmode = \"sync\"\nallreduce = \"ps\"\nmodel_parallel = 2\n", 4,
       "model_parallel = 2 splits each replica's gradient among its partitions: backup workers "
       "are for a synchronous data-parallel step of whole replicas (model_parallel = 1)"},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.cluster) {
      CheckDiagnostics(ParseInline(std::string(kData) + kModel + "[cluster]\n" + c.cluster +
                                   "backup_workers = 1\n"),
                       {{"inline.toml", kFirstClusterLine + c.lines, kValueColumn,
                         "cluster.backup_workers", "is 1, but " + c.why}});
    }
  }
}

BOOST_AUTO_TEST_CASE(nothing_is_held_against_it_when_the_layout_failed_to_read) {
  CheckDiagnostics(ParseInline(std::string(kData) +
                               "[cluster]\nworkers = 3\nmode = \"sync\"\nallreduce = \"pss\"\n"
                               "backup_workers = 1\n"),
                   {{"inline.toml", 6, 13, "cluster.allreduce", "got \"pss\""}});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace backup_workers_key_test
}  // namespace dtrain::config
