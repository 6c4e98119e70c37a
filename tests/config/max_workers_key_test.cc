// [cluster] max_workers in a job file: unset by default (the job grows no further than workers),
// read at least workers and written back where it applies; above workers it makes the job elastic
// and is refused, saying why, where min_workers below workers is; below workers, always.
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "config/diagnostic_checks.h"
#include "config/elastic_refusals.h"
#include "config/job_file.h"
#include "config/job_layout.h"
#include "config/mode_traits.h"

namespace dtrain::config {
namespace max_workers_key_test {

using testing::CheckClusterWrittenBack;
using testing::CheckDiagnostics;
using testing::CheckNotWritten;
using testing::CheckRefusedWhereNotElastic;
using testing::MustParseInline;
using testing::ParseInline;

constexpr const char* kData = "[data]\nformat = \"synthetic\"\n";
constexpr const char* kSync = "[cluster]\nworkers = 3\nmode = \"sync\"\n";

BOOST_AUTO_TEST_SUITE(max_workers_key)

BOOST_AUTO_TEST_CASE(unset_by_default_the_job_trains_at_most_its_workers) {
  const JobConfig job = MustParseInline(std::string(kData) + kSync);
  BOOST_TEST(job.cluster.max_workers == 0);
  BOOST_TEST(job.cluster.MostMembers() == 3);
  BOOST_TEST(job.cluster.Trainers() == 3);
  BOOST_TEST(!job.cluster.Elastic());
  CheckNotWritten(job, "max_workers");
}

BOOST_AUTO_TEST_CASE(read_and_written_back_elastic_only_above_the_workers) {
  for (const int max : {3, 4, 6}) {
    BOOST_TEST_CONTEXT("max_workers = " << max) {
      const JobConfig job = MustParseInline(std::string(kData) + kSync +
                                            "max_workers = " + std::to_string(max) + "\n");
      BOOST_TEST(job.cluster.max_workers == max);
      BOOST_TEST(job.cluster.Elastic() == (max > 3));
      // Its ranks go up to max_workers - 1; it never trains with fewer than workers.
      BOOST_TEST(job.cluster.MostMembers() == max);
      BOOST_TEST(job.cluster.Processes() == max);
      BOOST_TEST(job.cluster.FewestMembers() == 3);
      CheckClusterWrittenBack(job, "max_workers = " + std::to_string(max));
    }
  }
}

// Every rank up to max_workers - 1 is a replica of the one data-parallel group, each lost one
// restarted alone (it joins the others' ring), never the attempt.
BOOST_AUTO_TEST_CASE(its_ranks_are_replicas_up_to_max_workers) {
  const JobConfig job = MustParseInline(std::string(kData) + kSync + "max_workers = 5\n");
  BOOST_TEST(DataParallelGroup(job.cluster, 0) == std::vector<int>({0, 1, 2, 3, 4}),
             boost::test_tools::per_element());
  for (int rank = 0; rank < 5; ++rank) {
    BOOST_TEST_CONTEXT("rank " << rank) {
      const ProcessRole role = RoleOf(job.cluster, rank);
      BOOST_TEST((role.kind == ProcessRole::Kind::kReplica));
      BOOST_TEST(role.replica == rank);
      BOOST_TEST((CostOfLosing(job, rank) == LostProcess::kRestartAlone));
    }
  }
}

BOOST_AUTO_TEST_CASE(with_min_workers_the_job_ranges_around_its_workers) {
  const JobConfig job =
      MustParseInline(std::string(kData) + kSync + "min_workers = 2\nmax_workers = 5\n");
  BOOST_TEST(job.cluster.Elastic());
  BOOST_TEST(job.cluster.FewestMembers() == 2);
  BOOST_TEST(job.cluster.MostMembers() == 5);
  BOOST_TEST(job.cluster.workers == 3);  // the global batch's
}

BOOST_AUTO_TEST_CASE(fewer_than_the_workers_is_refused_naming_both) {
  CheckDiagnostics(
      ParseInline(std::string(kData) + kSync + "max_workers = 2\n"),
      {{"inline.toml", 6, 15, "cluster.max_workers",
        "is 2, fewer than cluster.workers = 3: the job grows from workers toward it"}});
  CheckDiagnostics(ParseInline(std::string(kData) + kSync + "max_workers = 0\n"),
                   {{"inline.toml", 6, 15, "cluster.max_workers", "must be an integer in [1, "}});
}

// Equal to workers it changes nothing, so it is taken wherever workers is.
BOOST_AUTO_TEST_CASE(equal_to_the_workers_is_taken_in_every_mode) {
  const JobConfig job = MustParseInline(
      std::string(kData) + "[cluster]\nworkers = 2\nmode = \"async\"\nmax_workers = 2\n");
  BOOST_TEST(!job.cluster.Elastic());
  BOOST_TEST(job.cluster.MostMembers() == 2);
}

BOOST_AUTO_TEST_CASE(above_the_workers_read_and_written_back_in_mode_local) {
  const JobConfig job = MustParseInline(
      std::string(kData) + "[cluster]\nworkers = 3\nmode = \"local\"\nmax_workers = 4\n");
  BOOST_TEST(job.cluster.Elastic());
  BOOST_TEST(job.cluster.ElasticApplies());
  BOOST_TEST(job.cluster.MostMembers() == 4);
  CheckClusterWrittenBack(job, "max_workers = 4");
}

// Slurm grants the replicas beyond workers as allocations of their own, as those up to it.
BOOST_AUTO_TEST_CASE(above_the_workers_read_and_written_back_with_scheduler_slurm) {
  const JobConfig job =
      MustParseInline(std::string(kData) + kSync + "scheduler = \"slurm\"\nmax_workers = 5\n");
  BOOST_TEST(job.cluster.Elastic());
  BOOST_TEST(job.cluster.ElasticApplies());
  BOOST_TEST(job.cluster.MostMembers() == 5);
  CheckClusterWrittenBack(job, "max_workers = 5");
}

BOOST_AUTO_TEST_CASE(above_the_workers_refused_where_the_job_cannot_train_elastically) {
  CheckRefusedWhereNotElastic("max_workers", 3);
}

BOOST_AUTO_TEST_CASE(above_the_workers_on_one_parameter_server_read_and_written_back) {
  const JobConfig job = MustParseInline(std::string(kData) + kSync +
                                        "allreduce = \"ps\"\nservers = 1\nmax_workers = 4\n");
  BOOST_TEST(job.cluster.Elastic());
  BOOST_TEST(job.cluster.MostMembers() == 4);
  CheckClusterWrittenBack(job, "max_workers = 4");
  // Ranks 0..3 are replicas, the shard rank 4.
  BOOST_TEST((RoleOf(job.cluster, 3).kind == ProcessRole::Kind::kReplica));
  BOOST_TEST((RoleOf(job.cluster, 4).kind == ProcessRole::Kind::kShard));
}

BOOST_AUTO_TEST_CASE(above_the_workers_on_two_parameter_servers_read_and_written_back) {
  const JobConfig job = MustParseInline(std::string(kData) + kSync +
                                        "allreduce = \"ps\"\nservers = 2\nmax_workers = 4\n");
  BOOST_TEST(job.cluster.ElasticApplies());
  CheckClusterWrittenBack(job, "max_workers = 4");
  // Ranks 0..3 are replicas, the shards ranks 4 and 5.
  BOOST_TEST((RoleOf(job.cluster, 3).kind == ProcessRole::Kind::kReplica));
  BOOST_TEST((RoleOf(job.cluster, 5).kind == ProcessRole::Kind::kShard));
}

BOOST_AUTO_TEST_CASE(above_the_workers_refused_on_parameter_servers_with_compression) {
  testing::CheckRefusedOnShards("max_workers", 4);
}

// A parameter server names each step's replicas in a 64-bit mask: 64 replicas fit, 65 do not.
BOOST_AUTO_TEST_CASE(above_64_on_a_parameter_server_is_refused) {
  const std::string ps = std::string(kData) + kSync + "allreduce = \"ps\"\nservers = 1\n";
  BOOST_TEST(MustParseInline(ps + "max_workers = 64\n").cluster.MostMembers() == 64);
  CheckDiagnostics(ParseInline(ps + "max_workers = 65\n"),
                   {{"inline.toml", 8, 15, "cluster.max_workers",
                     "is 65, but an elastic job on a parameter server trains at most 64 replicas "
                     "(its steps name them in one 64-bit mask), and this one has up to 65"}});
}

BOOST_AUTO_TEST_CASE(above_the_workers_refused_with_compressed_gradients) {
  CheckDiagnostics(
      ParseInline(std::string(kData) + kSync + "compression = \"powersgd\"\nmax_workers = 4\n"),
      {{"inline.toml", 7, 15, "cluster.max_workers",
        "is 4, but cluster.compression \"powersgd\" keeps residuals a regroup cannot "
        "carry over: elastic jobs exchange whole gradients or parameters (compression = "
        "\"none\")"}});
}

BOOST_AUTO_TEST_CASE(above_the_workers_refused_in_mode_local_with_compressed_parameters) {
  CheckDiagnostics(ParseInline(std::string(kData) +
                               "[cluster]\nworkers = 3\nmode = \"local\"\ncompression = \"topk\"\n"
                               "max_workers = 4\n"),
                   {{"inline.toml", 7, 15, "cluster.max_workers",
                     "is 4, but cluster.compression \"topk\" keeps residuals a regroup cannot "
                     "carry over: elastic jobs exchange whole gradients or parameters "
                     "(compression = \"none\")"}});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace max_workers_key_test
}  // namespace dtrain::config
