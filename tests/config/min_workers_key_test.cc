// [cluster] min_workers in a job file: unset by default (not elastic), read within 1 .. workers
// and written back where it applies (sync replicas on the ring or on one parameter server, or
// local ones, placed by the daemon or by Slurm), refused at its place, saying why, elsewhere.
#include <boost/test/unit_test.hpp>
#include <string>

#include "config/diagnostic_checks.h"
#include "config/elastic_refusals.h"
#include "config/job_file.h"
#include "config/mode_traits.h"

namespace dtrain::config {
namespace min_workers_key_test {

using testing::CheckClusterWrittenBack;
using testing::CheckDiagnostics;
using testing::CheckNotWritten;
using testing::CheckRefusedOnShards;
using testing::CheckRefusedWhereNotElastic;
using testing::MustParseInline;
using testing::ParseInline;

constexpr const char* kData = "[data]\nformat = \"synthetic\"\n";
constexpr const char* kSync = "[cluster]\nworkers = 3\nmode = \"sync\"\n";
constexpr const char* kLocal = "[cluster]\nworkers = 3\nmode = \"local\"\n";

BOOST_AUTO_TEST_SUITE(min_workers_key)

BOOST_AUTO_TEST_CASE(unset_by_default_the_job_is_not_elastic) {
  const JobConfig job = MustParseInline(std::string(kData) + kSync);
  BOOST_TEST(job.cluster.min_workers == 0);
  BOOST_TEST(!job.cluster.Elastic());
  BOOST_TEST(FormatResolvedJob(job, ResolvedKeys::kApplicable).find("\nmin_workers = ") ==
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(read_and_written_back_elastic_only_below_the_workers) {
  for (const int min : {1, 2, 3}) {
    BOOST_TEST_CONTEXT("min_workers = " << min) {
      const JobConfig job = MustParseInline(std::string(kData) + kSync +
                                            "min_workers = " + std::to_string(min) + "\n");
      BOOST_TEST(job.cluster.min_workers == min);
      BOOST_TEST(job.cluster.Elastic() == (min < 3));
      CheckClusterWrittenBack(job, "min_workers = " + std::to_string(min));
    }
  }
}

// Written elsewhere, even among every key, the key would be refused when read back.
BOOST_AUTO_TEST_CASE(not_written_where_it_does_not_apply) {
  for (const char* cluster : {"", "[cluster]\nworkers = 2\nmode = \"async\"\n",
                              "[cluster]\nworkers = 2\nmode = \"sync\"\nallreduce = \"ps\"\n"
                              "compression = \"bf16\"\n"}) {
    BOOST_TEST_CONTEXT(cluster) {
      CheckNotWritten(MustParseInline(std::string(kData) + cluster), "min_workers");
    }
  }
}

BOOST_AUTO_TEST_CASE(out_of_range_values_are_refused_at_the_key) {
  CheckDiagnostics(ParseInline(std::string(kData) + kSync + "min_workers = 0\n"),
                   {{"inline.toml", 6, 15, "cluster.min_workers", "must be an integer in [1, "}});
  CheckDiagnostics(ParseInline(std::string(kData) + kSync + "min_workers = 4\n"),
                   {{"inline.toml", 6, 15, "cluster.min_workers",
                     "is 4, but the job has only cluster.workers = 3"}});
}

// Mode "local" regroups on the ring too: its replicas average their parameters there.
BOOST_AUTO_TEST_CASE(read_and_written_back_in_mode_local) {
  const JobConfig job =
      MustParseInline(std::string(kData) + kLocal + "average_every = 4\nmin_workers = 2\n");
  BOOST_TEST(job.cluster.min_workers == 2);
  BOOST_TEST(job.cluster.Elastic());
  BOOST_TEST(job.cluster.ElasticApplies());
  CheckClusterWrittenBack(job, "min_workers = 2");
}

// Slurm places an elastic job too: its first allocation holds min_workers replicas, and each
// further replica is an allocation of its own (daemon/server/slurm_growth.cc).
BOOST_AUTO_TEST_CASE(read_and_written_back_with_scheduler_slurm) {
  for (const char* mode : {"sync", "local"}) {
    BOOST_TEST_CONTEXT(mode) {
      const JobConfig job =
          MustParseInline(std::string(kData) + "[cluster]\nworkers = 3\nmode = \"" + mode +
                          "\"\nscheduler = \"slurm\"\nmin_workers = 1\n");
      BOOST_TEST(job.cluster.Elastic());
      BOOST_TEST(job.cluster.ElasticApplies());
      BOOST_TEST(job.cluster.FewestMembers() == 1);
      CheckClusterWrittenBack(job, "min_workers = 1");
    }
  }
}

BOOST_AUTO_TEST_CASE(refused_where_the_job_cannot_train_elastically) {
  CheckRefusedWhereNotElastic("min_workers", 1);
}

BOOST_AUTO_TEST_CASE(on_one_parameter_server_read_and_written_back) {
  const JobConfig job = MustParseInline(std::string(kData) + kSync +
                                        "allreduce = \"ps\"\nservers = 1\nmin_workers = 2\n");
  BOOST_TEST(job.cluster.Elastic());
  BOOST_TEST(job.cluster.SumsOnShards());
  CheckClusterWrittenBack(job, "min_workers = 2");
  // Its lost replica restarts alone; its lost shard, the attempt.
  BOOST_TEST((CostOfLosing(job, 1) == LostProcess::kRestartAlone));
  BOOST_TEST((CostOfLosing(job, 3) == LostProcess::kRestartAll));
}

BOOST_AUTO_TEST_CASE(refused_on_parameter_servers_with_compression) {
  CheckRefusedOnShards("min_workers", 2);
}

// On several parameter servers too: a replica lost between its pushes to two shards leaves its
// step applied on some, which the survivors' membership undoes (ps_protocol.md, "Elastic jobs").
BOOST_AUTO_TEST_CASE(on_several_servers_read_and_written_back) {
  const JobConfig job = MustParseInline(std::string(kData) + kSync +
                                        "allreduce = \"ps\"\nservers = 2\nmin_workers = 2\n");
  BOOST_TEST(job.cluster.Elastic());
  BOOST_TEST(job.cluster.ElasticApplies());
  CheckClusterWrittenBack(job, "min_workers = 2");
  CheckClusterWrittenBack(job, "servers = 2");
  // Its lost replica restarts alone; a lost shard, the attempt.
  BOOST_TEST((CostOfLosing(job, 1) == LostProcess::kRestartAlone));
  BOOST_TEST((CostOfLosing(job, 3) == LostProcess::kRestartAll));
  BOOST_TEST((CostOfLosing(job, 4) == LostProcess::kRestartAll));
}

// An elastic job on one parameter server may have backup workers: both keys are taken (each
// membership goes on without min(backup_workers, members - 1) of its members).
BOOST_AUTO_TEST_CASE(with_backup_workers_on_one_server_read_and_written_back) {
  const JobConfig job =
      MustParseInline(std::string(kData) + kSync +
                      "allreduce = \"ps\"\nservers = 1\nbackup_workers = 1\nmin_workers = 2\n");
  BOOST_TEST(job.cluster.Elastic());
  BOOST_TEST(job.cluster.ElasticApplies());
  BOOST_TEST(job.cluster.BackupWorkersApply());
  CheckClusterWrittenBack(job, "min_workers = 2");
  CheckClusterWrittenBack(job, "backup_workers = 1");
}

// Where backup workers cannot apply, the pair is refused at backup_workers (on the ring, where an
// elastic job regroups, and on several servers, where it regroups too but each shard would choose
// its own steps' replicas) or at both keys (compression), each saying why.
BOOST_AUTO_TEST_CASE(with_backup_workers_refused_where_either_key_is) {
  CheckDiagnostics(
      ParseInline(std::string(kData) + kSync + "backup_workers = 1\nmin_workers = 2\n"),
      {{"inline.toml", 6, 18, "cluster.backup_workers",
        "is 1, but allreduce \"ring\" cannot finish a step before every replica has sent its "
        "part"}});
  CheckDiagnostics(
      ParseInline(std::string(kData) + kSync +
                  "allreduce = \"ps\"\nservers = 2\nbackup_workers = 1\nmin_workers = 2\n"),
      {{"inline.toml", 8, 18, "cluster.backup_workers",
        "is 1, but servers = 2: every shard would have to agree which replicas' gradients each "
        "step took, and a late replica could fetch ranges of different steps from different "
        "shards: backup workers need servers = 1"}});
  CheckDiagnostics(
      ParseInline(std::string(kData) + kSync +
                  "allreduce = \"ps\"\ncompression = \"bf16\"\nbackup_workers = 1\n"
                  "min_workers = 2\n"),
      {{"inline.toml", 8, 18, "cluster.backup_workers",
        "is 1, but cluster.compression \"bf16\" keeps an error-feedback residual"},
       {"inline.toml", 9, 15, "cluster.min_workers",
        "is 2, but cluster.compression \"bf16\" keeps residuals a regroup cannot carry over"}});
}

BOOST_AUTO_TEST_CASE(refused_with_compressed_gradients) {
  CheckDiagnostics(
      ParseInline(std::string(kData) + kSync + "compression = \"powersgd\"\nmin_workers = 2\n"),
      {{"inline.toml", 7, 15, "cluster.min_workers",
        "is 2, but cluster.compression \"powersgd\" keeps residuals a regroup cannot "
        "carry over: elastic jobs exchange whole gradients or parameters (compression = "
        "\"none\")"}});
}

BOOST_AUTO_TEST_CASE(refused_in_mode_local_with_compressed_parameters) {
  CheckDiagnostics(
      ParseInline(std::string(kData) + kLocal + "compression = \"topk\"\nmin_workers = 2\n"),
      {{"inline.toml", 7, 15, "cluster.min_workers",
        "is 2, but cluster.compression \"topk\" keeps residuals a regroup cannot carry over: "
        "elastic jobs exchange whole gradients or parameters (compression = \"none\")"}});
}

BOOST_AUTO_TEST_CASE(nothing_is_held_against_it_when_the_mode_failed_to_read) {
  CheckDiagnostics(ParseInline(std::string(kData) +
                               "[cluster]\nworkers = 2\nmode = \"synk\"\nmin_workers = 1\n"),
                   {{"inline.toml", 5, 8, "cluster.mode", "got \"synk\""}});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace min_workers_key_test
}  // namespace dtrain::config
