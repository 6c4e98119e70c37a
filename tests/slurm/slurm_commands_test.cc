// The Slurm commands a daemon runs for a job and what it reads back: salloc's arguments from the
// job, the allocation id in salloc's lines, scontrol's fields, the reasons Slurm's own ends give,
// and srun's arguments for one task. Pure functions; no Slurm needed.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "daemon/server/slurm_commands.h"
#include "daemon/store/records.h"
#include "daemon/worker/slurm_task.h"

namespace dtrain::server {
namespace slurm_commands_test {

BOOST_AUTO_TEST_SUITE(slurm_commands)

BOOST_AUTO_TEST_CASE(salloc_asks_for_a_task_per_process_and_the_jobs_slurm_keys) {
  config::JobConfig job;
  job.cluster.workers = 4;
  job.cluster.mode = config::ClusterMode::kAsync;  // and one shard: 5 processes
  job.threads = 2;
  job.slurm.partition = "debug";
  job.slurm.time_limit = "2:00:00";
  job.slurm.options = {"--constraint=avx512"};
  BOOST_TEST(FirstAllocationTasks(job) == 5);
  const std::vector<std::string> argv =
      SallocArguments(job, SlurmJobName("node-1", 7), FirstAllocationTasks(job));
  const std::vector<std::string> expected = {"salloc",           "--no-shell",
                                             "--job-name=dtrain-node-1-7", "--ntasks=5",
                                             "--cpus-per-task=2", "--partition=debug",
                                             "--time=2:00:00",    "--constraint=avx512"};
  BOOST_TEST(argv == expected, boost::test_tools::per_element());
  job.threads = 0;  // automatic: one core a task
  BOOST_TEST(SallocArguments(job, "x", 5)[4] == "--cpus-per-task=1");
}

// An elastic job's first allocation holds min_workers replicas (and its shard); each further one,
// up to max_workers, is an allocation of its own.
BOOST_AUTO_TEST_CASE(an_elastic_jobs_first_allocation_holds_its_fewest_replicas) {
  config::JobConfig job;
  job.cluster.workers = 4;
  job.cluster.mode = config::ClusterMode::kSync;
  job.cluster.min_workers = 2;
  job.cluster.max_workers = 6;
  BOOST_TEST(FirstAllocationTasks(job) == 2);
  job.cluster.allreduce = config::AllReduce::kPs;
  job.cluster.servers = 1;
  BOOST_TEST(FirstAllocationTasks(job) == 3);  // and the shard
  job.cluster.min_workers = 0;                 // up to workers at once, then grown beyond
  BOOST_TEST(FirstAllocationTasks(job) == 5);
  BOOST_TEST(SallocArguments(job, "x", 1)[3] == "--ntasks=1");
}

BOOST_AUTO_TEST_CASE(the_allocation_id_is_read_from_salloc_lines) {
  BOOST_TEST(AllocationIdIn("salloc: Granted job allocation 812").value() == 812);
  BOOST_TEST(AllocationIdIn("salloc: Pending job allocation 13").value() == 13);
  BOOST_TEST(IsGrantLine("salloc: Granted job allocation 812"));
  BOOST_TEST(!IsGrantLine("salloc: Pending job allocation 13"));
  BOOST_TEST(!AllocationIdIn("salloc: job 13 queued and waiting for resources"));
  BOOST_TEST(!AllocationIdIn("salloc: Granted job allocation x"));
}

BOOST_AUTO_TEST_CASE(scontrol_fields_and_slurms_own_ends) {
  const std::string line =
      "JobId=5 JobName=dtrain-vm-1 JobState=TIMEOUT Reason=TimeLimit NodeList=node[3-4] X=";
  BOOST_TEST(ScontrolField(line, "JobState") == "TIMEOUT");
  BOOST_TEST(ScontrolField(line, "NodeList") == "node[3-4]");
  BOOST_TEST(ScontrolField(line, "Job").empty());
  BOOST_TEST(ScontrolField(line, "X").empty());
  config::SlurmConfig slurm;
  slurm.time_limit = "10";
  const std::string timeout = "Slurm job 5 reached its time limit (slurm.time_limit = \"10\")";
  BOOST_TEST(DescribeSlurmEnd("TIMEOUT", "TimeLimit", 5, slurm) == timeout);
  // While the tasks are still being killed scontrol says COMPLETING; the reason tells.
  BOOST_TEST(DescribeSlurmEnd("COMPLETING", "TimeLimit", 5, slurm) == timeout);
  BOOST_TEST(DescribeSlurmEnd("PREEMPTED", "None", 5, slurm) ==
             "Slurm job 5 was preempted by Slurm");
  BOOST_TEST(DescribeSlurmEnd("NODE_FAIL", "None", 5, slurm).find("lost a node") !=
             std::string::npos);
  BOOST_TEST(DescribeSlurmEnd("COMPLETING", "None", 5, slurm).empty());
  BOOST_TEST(DescribeSlurmEnd("CANCELLED", "None", 5, slurm).empty());
  BOOST_TEST(DescribeSlurmEnd("FAILED", "NonZeroExitCode", 5, slurm).empty());
}

BOOST_AUTO_TEST_CASE(the_newest_grant_event_is_the_jobs_slurm_job) {
  std::vector<store::EventRecord> events(4);
  events[0].reason = "submitted";
  events[1].reason = store::SlurmGrantReason({4, "vm", std::nullopt});
  events[2].reason = "restart 1 of 3: worker rank 1 killed by signal SIGKILL";
  events[3].reason = store::SlurmGrantReason({9, "node[3-4]", std::nullopt});
  const std::optional<store::SlurmGrant> grant = store::NewestSlurmGrant(events);
  BOOST_REQUIRE(grant.has_value());
  BOOST_TEST(grant->job == 9);
  BOOST_TEST(grant->nodes == "node[3-4]");
  events.resize(1);
  BOOST_TEST(!store::NewestSlurmGrant(events).has_value());
  BOOST_TEST(store::AttemptSlurmGrants(events).empty());
}

// A further replica's grant names its rank; the attempt's grants run from the newest that names
// none (the attempt's allocation) on, whatever came between.
BOOST_AUTO_TEST_CASE(a_further_replicas_grant_names_its_worker_and_joins_its_attempts_list) {
  BOOST_TEST(store::SlurmGrantReason({813, "node3", 2}) ==
             "Slurm job 813 granted on node3 for worker 2");
  std::vector<store::EventRecord> events(6);
  events[0].reason = store::SlurmGrantReason({4, "vm", std::nullopt});
  events[1].reason = store::SlurmGrantReason({5, "(nodes unknown)", 1});
  events[2].reason = "restart 1 of 3: worker rank 0 killed by signal SIGKILL";
  events[3].reason = store::SlurmGrantReason({9, "node[3-4]", std::nullopt});
  events[4].reason = "worker 1 lost at step 40, 1 carry on";
  events[5].reason = store::SlurmGrantReason({12, "(nodes unknown)", 3});
  const std::vector<store::SlurmGrant> grants = store::AttemptSlurmGrants(events);
  BOOST_TEST_REQUIRE(grants.size() == 2u);
  BOOST_TEST(grants[0].job == 9);
  BOOST_TEST(grants[0].nodes == "node[3-4]");
  BOOST_TEST(!grants[0].worker.has_value());
  BOOST_TEST(grants[1].job == 12);
  BOOST_TEST(grants[1].nodes == "(nodes unknown)");
  BOOST_TEST((grants[1].worker == 3));
  const std::optional<store::SlurmGrant> newest = store::NewestSlurmGrant(events);
  BOOST_TEST_REQUIRE(newest.has_value());
  BOOST_TEST(newest->job == 12);
  events.resize(3);  // the first attempt's, with the restart after them
  const std::vector<store::SlurmGrant> first = store::AttemptSlurmGrants(events);
  BOOST_TEST_REQUIRE(first.size() == 2u);
  BOOST_TEST(first[1].nodes == "(nodes unknown)");
  BOOST_TEST((first[1].worker == 1));
}

BOOST_AUTO_TEST_CASE(a_task_is_one_srun_step_that_connects_back) {
  const std::vector<std::string> argv = worker::SrunArguments(
      {.allocation = 812, .job = 7, .rank = 2, .cpus = 4, .coordinator = "10.0.0.1:7070"},
      "/usr/sbin/dtraind");
  const std::vector<std::string> expected = {
      "srun", "--jobid=812", "--ntasks=1", "--nodes=1", "--cpus-per-task=4", "--exact", "--quiet",
      "--job-name=dtrain-7-rank-2", "--", "/usr/sbin/dtraind", "worker", "--job", "7", "--rank",
      "2", "--connect", "10.0.0.1:7070"};
  BOOST_TEST(argv == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace slurm_commands_test
}  // namespace dtrain::server
