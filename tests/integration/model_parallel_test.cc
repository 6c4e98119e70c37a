// Model parallelism through the product: jobs whose replicas are K processes each, run by
// `dtrain run` and by a real dtraind, in every mode. Each is checked against the same job without
// partitions (a whole run ends within what float reordering allows: the partitions sum the same
// products in other orders), and a partition killed mid-run is recovered from.
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/temp_dir.h"
#include "core/dist/replica_harness.h"
#include "integration/daemon_fixture.h"
#include "integration/finished_run.h"

namespace dtrain::testing {
namespace model_parallel_test {

using json = nlohmann::json;

// Three layers (12, 10 and 3 units) to split two or three ways either way; 2880 rows are 60
// batches of 2 x 24 and 120 of 24.
std::string Job(const std::string& cluster, int batch = 24, const std::string& train = "") {
  return "name = \"mp\"\n"
         "[data]\nformat = \"synthetic\"\nsynthetic = \"blobs\"\nrows = 2880\nclasses = 3\n"
         "[model]\ntype = \"mlp\"\nhidden = [12, 10]\nactivation = \"tanh\"\n"
         "[train]\nepochs = 0\nsteps = 40\neval_every = 20\nlog_every = 10\nbatch_size = " +
         std::to_string(batch) + "\nseed = 5\n" + train +
         "[optimizer]\nlr = 0.1\n[cluster]\n" + cluster + "[checkpoint]\nevery_steps = 20\n";
}

std::string Partitions(int k, const char* kind, int micro_batches = 1) {
  return "model_parallel = " + std::to_string(k) + "\npartition = \"" + kind +
         "\"\nmicro_batches = " + std::to_string(micro_batches) + "\n";
}

// `partitioned` ended where `whole` did, and its partitions reported their exchanges.
void CheckSameRun(const Finished& partitioned, const Finished& whole, const std::string& what) {
  BOOST_TEST_CONTEXT(what) {
    BOOST_REQUIRE_EQUAL(partitioned.params.size(), whole.params.size());
    const double diff = dist::testing::MaxRelativeDifference(partitioned.params, whole.params);
    BOOST_TEST_MESSAGE(what << ": largest relative difference " << diff);
    BOOST_TEST(diff < 1e-5);
    BOOST_TEST(partitioned.worst.at("activation_bytes") > 0.0);
    BOOST_TEST(partitioned.worst.count("pipeline_idle_seconds") == 1u);
    BOOST_TEST(partitioned.worst.count("compute_seconds") == 1u);
  }
}

BOOST_AUTO_TEST_SUITE(model_parallel_jobs, *boost::unit_test::label("long"))

BOOST_AUTO_TEST_CASE(one_partitioned_replica_trains_what_the_whole_model_trains) {
  TempDir dir;
  const Finished whole = RunJob(dir, "whole", Job(""));
  CheckSameRun(RunJob(dir, "layers2", Job(Partitions(2, "layers"))), whole, "layers, K = 2");
  CheckSameRun(RunJob(dir, "layers3", Job(Partitions(3, "layers"))), whole, "layers, K = 3");
  CheckSameRun(RunJob(dir, "tensor2", Job(Partitions(2, "tensor"))), whole, "tensor, K = 2");
  CheckSameRun(RunJob(dir, "tensor3", Job(Partitions(3, "tensor"))), whole, "tensor, K = 3");
  const Finished micro = RunJob(dir, "micro", Job(Partitions(2, "layers", 4)));
  CheckSameRun(micro, whole, "layers, K = 2, 4 micro-batches");
  // A replica's partitions are ranks 0..K-1, all replicas; each says how much memory it took.
  BOOST_TEST(micro.workers.size() == 2u);
  BOOST_TEST(micro.worst.at("peak_rss_bytes") > 1e6);
  for (const store::WorkerRecord& w : micro.workers) BOOST_TEST(w.role == "replica");
}

BOOST_AUTO_TEST_CASE(sync_replicas_of_partitions_average_each_partition_apart) {
  TempDir dir;
  const std::string two = "workers = 2\nmode = \"sync\"\n";
  const Finished whole = RunJob(dir, "ring", Job(two));
  const Finished layers = RunJob(dir, "ring-layers", Job(two + Partitions(2, "layers")));
  CheckSameRun(layers, whole, "sync ring, 2 x 2 layers");
  CheckSameRun(RunJob(dir, "ring-tensor", Job(two + Partitions(2, "tensor"))), whole,
               "sync ring, 2 x 2 tensor");
  const Finished ps = RunJob(dir, "ps-tensor", Job(two + "allreduce = \"ps\"\nservers = 2\n" +
                                                   Partitions(2, "tensor")));
  CheckSameRun(ps, whole, "sync ps, 2 x 2 tensor, 2 shards each");
  BOOST_TEST(layers.workers.size() == 4u);
  BOOST_TEST(ps.workers.size() == 8u);  // 4 partitions, then 2 shards for each partition
  for (std::size_t r = 4; r < ps.workers.size(); ++r) BOOST_TEST(ps.workers[r].role == "server");
  CheckReplicasAgree(layers, 4);  // each replica's partitions report the replica's evaluation
}

BOOST_AUTO_TEST_CASE(local_and_async_partitions_meet_their_own_group) {
  TempDir dir;
  const std::string local = "workers = 2\nmode = \"local\"\naverage_every = 4\n";
  CheckSameRun(RunJob(dir, "local-tensor", Job(local + Partitions(2, "tensor"))),
               RunJob(dir, "local", Job(local)), "local, 2 x 2 tensor");
  // Downpour: each partition pushes its slice to its own 2 shards and fetches from them.
  const Finished async = RunJob(
      dir, "async", Job("workers = 2\nmode = \"async\"\nservers = 2\n" + Partitions(2, "layers")));
  const double loss = json::parse(async.run.out)["metrics"]["loss"].get<double>();
  BOOST_TEST(loss < 0.6, async.run.out);  // from ln 3 = 1.1
  BOOST_TEST(async.workers.size() == 8u);
  // Every shard's version vector is in the checkpoint: 2 partitions x 2 shards, of 2 replicas.
  BOOST_REQUIRE_EQUAL(async.clocks.size(), 4u);
  for (const auto& shard : async.clocks) BOOST_TEST(shard.size() == 2u);
  BOOST_TEST(async.worst.at("pushes_applied") > 0.0);
}

BOOST_AUTO_TEST_CASE(a_daemon_runs_a_partitioned_job_and_recovers_from_a_killed_partition) {
  DaemonFixture d;
  const std::int64_t id = d.Submit(
      "name = \"long\"\n[data]\nformat = \"synthetic\"\nrows = 20000\n"
      "[model]\ntype = \"mlp\"\nhidden = [32, 16]\n"
      "[train]\nepochs = 1000000\nbatch_size = 16\n[cluster]\nworkers = 2\nmode = \"sync\"\n"
      "model_parallel = 2\npartition = \"tensor\"\ntimeout_seconds = 30\n"
      "[checkpoint]\nevery_steps = 50\n[restart]\nmax_restarts = 1\n");
  json job = d.WaitForStep(id, 101);
  BOOST_REQUIRE_MESSAGE(job["state"] == "running", job.dump());
  BOOST_REQUIRE_EQUAL(job["workers"].size(), 4u);
  const std::int64_t before = job["step"].get<std::int64_t>();
  ::kill(job["workers"][1]["pid"].get<pid_t>(), SIGKILL);  // replica 0's partition 1
  job = d.WaitForRecovery(id, 8);
  BOOST_TEST(job["restarts"] == 1, job.dump());
  BOOST_REQUIRE_MESSAGE(job["state"] == "running", job.dump());
  const std::string resumed = job["events"].back()["reason"];
  BOOST_TEST(resumed.find("2 workers of 2 partitions training from the checkpoint at step") == 0,
             resumed);
  // The new attempt goes on from the checkpoint (at least step 50), not from the start.
  for (int i = 0; i < 1500 && job["step"].get<std::int64_t>() <= before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    job = d.Status(id);
  }
  BOOST_TEST(job["step"].get<std::int64_t>() > before, job.dump());
  d.Request({{"type", "cancel"}, {"id", id}});
  const json ended = d.Wait(id);
  BOOST_TEST(ended["state"] == "cancelled", ended.dump());
  // Its newest checkpoint is the whole model's: export writes one model file of it.
  const std::string model = d.dir().Path("long.dtm");
  const ProcessResult exported =
      RunProcess({EnvPath("DTRAIN_BIN"), "--socket", d.socket(), "export", std::to_string(id),
                  "-o", model, "--json"},
                 d.dir().Path(""));
  BOOST_TEST(exported.exit_code == 0, exported.err);
  BOOST_TEST(exported.out.find("hidden=32,16") != std::string::npos, exported.out);
}

BOOST_AUTO_TEST_CASE(an_async_replica_whose_partition_is_killed_restarts_alone) {
  DaemonFixture d;
  const std::int64_t id = d.Submit(
      "name = \"downpour\"\n[data]\nformat = \"synthetic\"\nrows = 20000\n"
      "[model]\ntype = \"mlp\"\nhidden = [32, 16]\n"
      "[train]\nepochs = 0\nsteps = 30000\nbatch_size = 16\neval_every = 5000\n"
      "[cluster]\nworkers = 2\nmode = \"async\"\nservers = 1\nmodel_parallel = 2\n"
      "timeout_seconds = 30\n[checkpoint]\nevery_steps = 200\n[restart]\nmax_restarts = 1\n");
  json job = d.WaitForStep(id, 300);
  BOOST_REQUIRE_MESSAGE(job["state"] == "running", job.dump());
  BOOST_REQUIRE_EQUAL(job["workers"].size(), 6u);  // 2 x 2 partitions, then a shard each
  std::vector<pid_t> others;  // replica 0's partitions and the shards: they go on
  for (int r : {0, 1, 4, 5}) others.push_back(job["workers"][r]["pid"].get<pid_t>());
  const pid_t victim = job["workers"][2]["pid"].get<pid_t>();  // replica 1's partition 0
  ::kill(victim, SIGKILL);
  for (int i = 0; i < 1500; ++i) {
    job = d.Status(id);
    if (job["restarts"] == 1 || job["state"] != "running") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  BOOST_TEST(job["restarts"] == 1, job.dump() << "\n" << d.LogTail(id));
  job = d.Wait(id);
  BOOST_TEST(job["state"] == "succeeded", job.dump() << "\n" << d.LogTail(id));
  int restarted = 0;
  for (const json& e : job["events"]) {
    BOOST_TEST(e["to"] != "recovering", job.dump());
    const std::string reason = e["reason"];
    if (reason.find("replica 1's 2 partitions started again") != std::string::npos) {
      ++restarted;
      BOOST_TEST(reason.find("restart 1 of 1: worker rank 2 (replica 1, partition 0)") == 0,
                 reason);
    }
  }
  BOOST_TEST(restarted == 1, job.dump());
  std::multiset<int> ranks;
  for (const json& w : job["workers"]) {
    ranks.insert(w["rank"].get<int>());
    const pid_t pid = w["pid"].get<pid_t>();
    if (std::find(others.begin(), others.end(), pid) != others.end()) {
      BOOST_TEST(w["exit_status"] == 0, job.dump());
    }
  }
  for (int r : {0, 1, 4, 5}) BOOST_TEST(ranks.count(r) == 1u, job.dump());
  for (int r : {2, 3}) BOOST_TEST(ranks.count(r) == 2u, job.dump());  // the old and the new
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace model_parallel_test
}  // namespace dtrain::testing
