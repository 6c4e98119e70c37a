// The mode table (config/mode_traits.h): its names round-trip, and what the rest of dtrain asks it
// (shards and coordinators, what a lost process costs, which engine a process runs) is what each
// mode does.
#include "config/mode_traits.h"

#include <boost/test/unit_test.hpp>

#include "config/job_layout.h"

namespace dtrain::config {
namespace mode_traits_test {

JobConfig JobOf(ClusterMode mode, int workers, int servers) {
  JobConfig job;
  job.cluster.mode = mode;
  job.cluster.workers = workers;
  job.cluster.servers = servers;
  return job;
}

BOOST_AUTO_TEST_SUITE(mode_traits)

BOOST_AUTO_TEST_CASE(every_mode_name_round_trips_and_the_choices_list_them_in_order) {
  BOOST_TEST(ClusterModeChoices() == "single, sync, async, local, sandblaster");
  for (const ClusterMode mode : {ClusterMode::kSingle, ClusterMode::kSync, ClusterMode::kAsync,
                                 ClusterMode::kLocal, ClusterMode::kSandblaster}) {
    BOOST_TEST((TraitsOf(mode).mode == mode));
    const Result<ClusterMode> parsed = ParseClusterMode(ClusterModeName(mode));
    BOOST_TEST_REQUIRE(parsed.ok());
    BOOST_TEST((parsed.value() == mode));
  }
  const Result<ClusterMode> unknown = ParseClusterMode("ring");
  BOOST_TEST_REQUIRE(!unknown.ok());
  BOOST_TEST(unknown.status().message() ==
             "unknown cluster mode 'ring' (allowed: single, sync, async, local, sandblaster)");
}

BOOST_AUTO_TEST_CASE(shards_and_a_coordinator_come_only_with_the_modes_that_use_them) {
  BOOST_TEST(JobOf(ClusterMode::kSingle, 1, 3).cluster.Servers() == 0);
  BOOST_TEST(JobOf(ClusterMode::kLocal, 4, 3).cluster.Servers() == 0);
  JobConfig sync = JobOf(ClusterMode::kSync, 4, 3);
  BOOST_TEST(sync.cluster.Servers() == 0);  // ring all-reduce
  sync.cluster.allreduce = AllReduce::kPs;
  BOOST_TEST(sync.cluster.Servers() == 3);
  BOOST_TEST(JobOf(ClusterMode::kAsync, 4, 3).cluster.Servers() == 3);
  const JobConfig sandblaster = JobOf(ClusterMode::kSandblaster, 4, 2);
  BOOST_TEST(sandblaster.cluster.Servers() == 2);
  BOOST_TEST(sandblaster.cluster.Coordinators() == 1);
  BOOST_TEST(sandblaster.cluster.Processes() == 7);
  BOOST_TEST(sync.cluster.Coordinators() == 0);
}

BOOST_AUTO_TEST_CASE(a_lost_process_costs_what_its_mode_says) {
  const JobConfig async = JobOf(ClusterMode::kAsync, 2, 1);
  BOOST_TEST((CostOfLosing(async, 1) == LostProcess::kRestartAlone));
  BOOST_TEST((CostOfLosing(async, 2) == LostProcess::kRestartAll));  // its shard
  JobConfig sparse_async = async;
  sparse_async.data.sparse = true;  // its shards take no replica back
  BOOST_TEST((CostOfLosing(sparse_async, 1) == LostProcess::kRestartAll));
  BOOST_TEST((CostOfLosing(JobOf(ClusterMode::kSync, 2, 1), 1) == LostProcess::kRestartAll));
  const JobConfig sandblaster = JobOf(ClusterMode::kSandblaster, 2, 1);
  BOOST_TEST((CostOfLosing(sandblaster, 0) == LostProcess::kCarryOn));
  BOOST_TEST(Expendable(sandblaster.cluster, 0));
  BOOST_TEST((CostOfLosing(sandblaster, 2) == LostProcess::kRestartAll));  // a shard
  BOOST_TEST((CostOfLosing(sandblaster, 3) == LostProcess::kRestartAll));  // the coordinator
  BOOST_TEST(!Expendable(sandblaster.cluster, 3));
  BOOST_TEST(WritesCheckpoints(sandblaster.cluster, 3));
  BOOST_TEST(!WritesCheckpoints(sandblaster.cluster, 0));
  BOOST_TEST(LeadRank(sandblaster.cluster) == 3);
}

BOOST_AUTO_TEST_CASE(an_elastic_sync_replica_restarts_alone_while_the_others_regroup) {
  JobConfig sync = JobOf(ClusterMode::kSync, 3, 1);
  sync.cluster.min_workers = 2;
  BOOST_TEST((CostOfLosing(sync, 2) == LostProcess::kRestartAlone));
  sync.cluster.min_workers = 3;  // as many as the workers: not elastic
  BOOST_TEST((CostOfLosing(sync, 2) == LostProcess::kRestartAll));
}

BOOST_AUTO_TEST_CASE(each_process_runs_the_engine_of_its_mode_role_data_and_optimizer) {
  JobConfig single = JobOf(ClusterMode::kSingle, 1, 1);
  BOOST_TEST((EngineOf(single, 0) == Engine::kSteps));
  single.optimizer.type = optim::OptimizerType::kLbfgs;
  BOOST_TEST((EngineOf(single, 0) == Engine::kLbfgs));
  JobConfig async = JobOf(ClusterMode::kAsync, 2, 1);
  BOOST_TEST((EngineOf(async, 0) == Engine::kSteps));
  BOOST_TEST((EngineOf(async, 2) == Engine::kParameterShard));
  async.data.sparse = true;
  BOOST_TEST((EngineOf(async, 0) == Engine::kSparseSteps));
  BOOST_TEST((EngineOf(async, 2) == Engine::kSparseShard));
  JobConfig sandblaster = JobOf(ClusterMode::kSandblaster, 2, 1);
  sandblaster.optimizer.type = optim::OptimizerType::kLbfgs;
  BOOST_TEST((EngineOf(sandblaster, 1) == Engine::kSandblasterWorker));
  BOOST_TEST((EngineOf(sandblaster, 2) == Engine::kVectorShard));
  BOOST_TEST((EngineOf(sandblaster, 3) == Engine::kSandblasterCoordinator));
}

BOOST_AUTO_TEST_CASE(messages_list_the_modes_a_rule_allows_in_table_order) {
  BOOST_TEST(QuotedModes([](const ModeTraits& m) { return m.several_workers; }) ==
             "\"sync\", \"async\", \"local\" or \"sandblaster\"");
  BOOST_TEST(QuotedModes([](const ModeTraits& m) { return m.lbfgs != LbfgsRule::kRefused; }) ==
             "\"single\" or \"sandblaster\"");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace mode_traits_test
}  // namespace dtrain::config
