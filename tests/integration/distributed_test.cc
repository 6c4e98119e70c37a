// Jobs of several worker processes, through `dtrain run` (its embedded coordinator) and through a
// real dtraind: real processes, real TCP on loopback, real stores. Each mode's result is checked
// against what it must equal — sync against one worker with the whole global batch, local with
// average_every = 1 against sync — and against itself across replicas (their evaluations of
// identical parameters are identical to the bit).
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "core/data/click_synthetic.h"
#include "core/dist/replica_harness.h"
#include "daemon/store/store.h"
#include "integration/daemon_fixture.h"
#include "integration/finished_run.h"

namespace dtrain::testing {
namespace distributed_test {

using json = nlohmann::json;

// 2880 rows = 30 global batches of 4 x 24 (and of 2 x 48, 3 x 32): no short batch, whatever N.
std::string BlobsJob(const std::string& cluster, int batch, const std::string& extra = "",
                     long long steps = 40) {
  return "name = \"dist\"\n"
         "[data]\nformat = \"synthetic\"\nsynthetic = \"blobs\"\nrows = 2880\nclasses = 3\n"
         "[model]\ntype = \"mlp\"\nhidden = [12]\nactivation = \"tanh\"\n"
         "[train]\nepochs = 0\nsteps = " +
         std::to_string(steps) + "\neval_every = 20\nbatch_size = " + std::to_string(batch) +
         "\nseed = 5\n" + extra + "[optimizer]\nlr = 0.1\n[cluster]\n" + cluster +
         "[checkpoint]\nevery_steps = 20\n";
}

// train.threads is auto in these jobs: each of the n replicas says how it uses its cores, and a
// model this small gets one thread whatever the host's cores (config::ChooseThreadLayout; how
// replicas share the cores is job_file_test's).
void CheckThreads(const Finished& f, int replicas) {
  const std::string expected = "1 thread";
  int starts = 0;
  for (const store::LogRow& row : f.logs) {
    if (row.line.rfind("training:", 0) != 0) continue;
    ++starts;
    BOOST_TEST(row.line.find(expected) != std::string::npos, row.line << " != " << expected);
  }
  BOOST_TEST(starts == replicas);
}

// The replicas of a sync job hold the same parameters: replica 0 alone prints the evaluations.
void CheckEvaluationsPrintedOnce(const Finished& f) {
  int evaluations = 0;
  for (const store::LogRow& row : f.logs) {
    if (row.line.rfind("step ", 0) != 0 || row.line.find(" loss ") == std::string::npos) continue;
    ++evaluations;
    BOOST_TEST(row.worker == 0, "worker " << row.worker << ": " << row.line);
  }
  BOOST_TEST(evaluations >= 2);  // eval_every = 20 of 40 steps
}

BOOST_AUTO_TEST_SUITE(distributed_jobs, *boost::unit_test::label("long"))

BOOST_AUTO_TEST_CASE(sync_ring_and_ps_with_n_workers_equal_one_worker_with_the_global_batch) {
  TempDir dir;
  for (int n : {2, 3, 4}) {
    const int batch = 96 / n;
    const Finished one = RunJob(dir, "one" + std::to_string(n), BlobsJob("", 96));
    const Finished ring =
        RunJob(dir, "ring" + std::to_string(n),
               BlobsJob("workers = " + std::to_string(n) + "\nmode = \"sync\"\n", batch));
    const Finished ps = RunJob(dir, "ps" + std::to_string(n),
                               BlobsJob("workers = " + std::to_string(n) +
                                            "\nmode = \"sync\"\nallreduce = \"ps\"\n"
                                            "servers = " +
                                            std::to_string(n - 1) + "\n",
                                        batch));
    BOOST_TEST_CONTEXT(n << " workers") {
      BOOST_REQUIRE_EQUAL(ring.params.size(), one.params.size());
      BOOST_REQUIRE_EQUAL(ps.params.size(), one.params.size());
      const double ring_diff = dist::testing::MaxRelativeDifference(ring.params, one.params);
      const double ps_diff = dist::testing::MaxRelativeDifference(ps.params, one.params);
      BOOST_TEST_MESSAGE(n << " workers: ring vs one " << ring_diff << ", ps vs one " << ps_diff);
      BOOST_TEST(ring_diff < 1e-5);
      BOOST_TEST(ps_diff < 1e-5);
      CheckReplicasAgree(ring, n);
      CheckReplicasAgree(ps, n);
      CheckThreads(ring, n);
      CheckEvaluationsPrintedOnce(ring);
      CheckEvaluationsPrintedOnce(ps);
      BOOST_TEST(ring.workers.size() == static_cast<std::size_t>(n));
      BOOST_TEST(ps.workers.size() == static_cast<std::size_t>(2 * n - 1));
      BOOST_TEST(ps.workers.back().role == "server");
      // On one host every link is shared memory (each replica's to each shard), and the sync
      // ring's replicas share their gradients and parameters in memory instead of passing them
      // round the ring.
      const std::string shard_links = "data plane: " + std::to_string(n - 1) + " shard link" +
                                      (n == 2 ? "" : "s") + " over shared memory";
      BOOST_TEST(CountLines(ps, shard_links) == n, shard_links);
      const std::string shared = "data plane: gradients and parameters shared in memory by the " +
                                 std::to_string(n) + " workers of this host";
      BOOST_TEST(CountLines(ring, shared) == n, shared);
      // Per-worker communication metrics are recorded.
      BOOST_TEST(ring.worst.at("bytes_sent") > 0.0);
      BOOST_TEST(ps.worst.at("comm_seconds") > 0.0);
    }
  }
}

BOOST_AUTO_TEST_CASE(float_messages_without_checksums_train_the_same_bits) {
  TempDir dir;
  for (const std::string mode : {"allreduce = \"ring\"\n", "allreduce = \"ps\"\n"}) {
    const std::string cluster = "workers = 2\nmode = \"sync\"\ntransport = \"tcp\"\n" + mode;
    const bool ps = mode.find("ps") != std::string::npos;
    const std::string name = ps ? "ps" : "ring";
    const Finished checked = RunJob(dir, name + "-checked", BlobsJob(cluster, 48));
    const Finished unchecked =
        RunJob(dir, name + "-unchecked", BlobsJob(cluster + "checksum = false\n", 48));
    BOOST_TEST(unchecked.params == checked.params, mode);
    CheckReplicasAgree(unchecked, 2);
    // The replicas say what carries their messages.
    const std::string links = ps ? "1 shard link" : "ring";
    BOOST_TEST(CountLines(checked, "data plane: " + links + " over tcp") == 2, mode);
    BOOST_TEST(CountLines(unchecked, "data plane: " + links + " over tcp without checksums") == 2,
               mode);
  }
}

BOOST_AUTO_TEST_CASE(local_sgd_replicas_are_identical_right_after_an_average) {
  // (That average_every = 1 with plain SGD computes sync SGD is shown on equal sampling in
  // tests/core/dist/local_sgd_test.cc; here each worker trains on its own shard.)
  TempDir dir;
  const Finished local =
      RunJob(dir, "local", BlobsJob("workers = 3\nmode = \"local\"\naverage_every = 4\n", 32));
  CheckReplicasAgree(local, 3);  // evaluations at steps 20 and 40, right after averages
  BOOST_TEST(local.eval_loss.at(0) < 0.6);
}

BOOST_AUTO_TEST_CASE(async_converges_and_max_staleness_bounds_every_applied_gradient) {
  TempDir dir;
  for (int s : {0, 1, 2}) {
    BOOST_TEST_CONTEXT("max_staleness " << s) {
      const Finished async = RunJob(
          dir, "async" + std::to_string(s),
          BlobsJob("workers = 3\nmode = \"async\"\nservers = 2\npush_every = 2\nfetch_every = 2\n"
                   "max_staleness = " +
                       std::to_string(s) + "\n",
                   32));
      // The job's result, the evaluation of the replica that got furthest: from ln 3 = 1.1 at
      // the start. (One replica may finish its 40 steps before the others have pushed much, over
      // shared memory especially, so a given rank's last evaluation says less.)
      const double loss = json::parse(async.run.out)["metrics"]["loss"].get<double>();
      BOOST_TEST(loss < 0.6, async.run.out);
      BOOST_REQUIRE(async.worst.count("staleness_max") == 1);
      if (s > 0) BOOST_TEST(async.worst.at("staleness_max") <= s);
      BOOST_TEST(async.worst.at("pushes_applied") > 0.0);
      // The checkpoint keeps each shard's version vector: 2 shards x 3 workers, at most the
      // 40 / push_every = 20 pushes a worker makes, and rank 0's all there (it took it last).
      BOOST_REQUIRE_EQUAL(async.clocks.size(), 2u);
      for (const std::vector<std::uint64_t>& shard : async.clocks) {
        BOOST_REQUIRE_EQUAL(shard.size(), 3u);
        for (std::uint64_t clock : shard) BOOST_TEST(clock <= 20u);
        BOOST_TEST(shard[0] == 20u);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(an_async_replica_reaching_the_target_stops_the_whole_job) {
  // Async replicas do not vote: the coordinator stops the others once one reaches the target.
  // Without that the job would run its 10^6 steps per worker.
  TempDir dir;
  const Finished async = RunJob(dir, "target",
                                BlobsJob("workers = 3\nmode = \"async\"\nservers = 1\n", 32,
                                         "target_accuracy = 0.8\n", 1000000));
  const json result = json::parse(async.run.out);
  BOOST_TEST(result["state"] == "succeeded", result.dump());
  BOOST_TEST(result["reason"].get<std::string>().rfind("reached target accuracy", 0) == 0,
             result.dump());
  BOOST_TEST(result["metrics"]["accuracy"].get<double>() >= 0.8, result.dump());
  BOOST_TEST(async.workers.size() == 4u);
  // The replica that reached the target and the shard exit 0; the replicas told to stop exit
  // with the status of a requested stop (130); none is killed.
  int reached = 0;
  for (const store::WorkerRecord& w : async.workers) {
    BOOST_REQUIRE_MESSAGE(w.exit_status.has_value(), "rank " << w.rank << " was killed");
    BOOST_TEST((*w.exit_status == 0 || (w.role == "replica" && *w.exit_status == 130)),
               "rank " << w.rank << " exited " << *w.exit_status);
    reached += w.role == "replica" && *w.exit_status == 0;
  }
  BOOST_TEST(reached >= 1);
}

BOOST_AUTO_TEST_CASE(a_daemon_runs_sync_and_async_jobs_of_several_workers) {
  DaemonFixture d;
  const std::int64_t ring = d.Submit(BlobsJob("workers = 2\nmode = \"sync\"\n", 48));
  const std::int64_t async = d.Submit(BlobsJob("workers = 2\nmode = \"async\"\nservers = 1\n", 48));
  for (const std::int64_t id : {ring, async}) {
    const json job = d.Wait(id);
    BOOST_TEST(job["state"] == "succeeded", job.dump());
    std::set<int> ranks;
    for (const json& w : job["workers"]) {
      BOOST_TEST(w["state"] == "exited", job.dump());
      ranks.insert(w["rank"].get<int>());
    }
    BOOST_TEST(ranks.size() == (id == ring ? 2u : 3u));
  }
}

BOOST_AUTO_TEST_CASE(a_killed_sync_worker_stops_its_peers_and_the_job_restarts) {
  DaemonFixture d;
  const std::int64_t id = d.Submit(
      "name = \"long\"\n[data]\nformat = \"synthetic\"\nrows = 20000\n"
      "[train]\nepochs = 1000000\nbatch_size = 16\n[cluster]\nworkers = 2\nmode = \"sync\"\n"
      "timeout_seconds = 30\n[checkpoint]\nevery_steps = 50\n[restart]\nmax_restarts = 1\n");
  json job = d.WaitForStep(id, 1);
  BOOST_REQUIRE(job["state"] == "running");
  const pid_t victim = job["workers"][1]["pid"].get<pid_t>();
  const auto killed = std::chrono::steady_clock::now();
  ::kill(victim, SIGKILL);
  // The survivor fails at once (its peer closed), so the job restarts well within the timeout.
  job = d.WaitForRecovery(id, 4);  // all four rows: two killed or stopped, two new
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  BOOST_TEST_MESSAGE("kill to running again: " << seconds << " s");
  BOOST_TEST(job["restarts"] == 1, job.dump());
  BOOST_TEST(job["state"] == "running", job.dump());
  BOOST_TEST(job["workers"].size() == 4u, job.dump());
  d.Request({{"type", "cancel"}, {"id", id}});
  BOOST_TEST(d.Wait(id)["restarts"] == 1);  // counted from its events once it has ended
}

// A sparse model on two shards (Downpour): a shard killed mid-run fails the attempt, which
// resumes from the newest checkpoint (the shards load their parts of it), and the job ends with
// an AUC within 0.005 of the same job left alone.
BOOST_AUTO_TEST_CASE(a_killed_sparse_shard_recovers_to_the_undisturbed_auc) {
  DaemonFixture d;
  const data::ClickData clicks =
      data::MakeClicks({.rows = 24000, .features = 1u << 16, .nonzeros = 20, .seed = 12});
  const std::string train = d.dir().Path("clicks.svm");
  BOOST_REQUIRE(data::WriteLibsvm(clicks.rows, train).ok());
  const std::string job_text =
      "name = \"clicks\"\n[data]\nformat = \"libsvm\"\nsparse = true\ntrain = \"" + train +
      "\"\nvalidation_fraction = 0.2\n[model]\ntype = \"logistic\"\n"
      "[train]\nepochs = 4\nbatch_size = 32\n[optimizer]\ntype = \"adagrad\"\nlr = 0.1\n"
      "[cluster]\nworkers = 2\nmode = \"async\"\nservers = 2\ntimeout_seconds = 30\n"
      "[checkpoint]\nevery_steps = 100\n[restart]\nmax_restarts = 1\n";
  const std::int64_t undisturbed = d.Submit(job_text);
  const json left_alone = d.Wait(undisturbed);
  BOOST_REQUIRE_MESSAGE(left_alone["state"] == "succeeded", left_alone.dump());

  const std::int64_t id = d.Submit(job_text);
  json job = d.WaitForStep(id, 400);
  BOOST_REQUIRE_MESSAGE(job["state"] == "running", job.dump());
  ::kill(job["workers"][3]["pid"].get<pid_t>(), SIGKILL);  // shard 1 (ranks 2, 3: the shards)
  job = d.Wait(id);
  BOOST_TEST(job["state"] == "succeeded", job.dump());
  BOOST_TEST(job["restarts"] == 1, job.dump());
  const double auc = job["metrics"]["eval_auc"].get<double>();
  const double alone_auc = left_alone["metrics"]["eval_auc"].get<double>();
  BOOST_TEST_MESSAGE("AUC " << auc << " after a shard was killed, " << alone_auc << " left alone");
  BOOST_TEST(std::abs(auc - alone_auc) < 0.005);
  BOOST_TEST(alone_auc > 0.6);
}

BOOST_AUTO_TEST_CASE(a_killed_async_worker_restarts_alone_while_the_others_go_on) {
  DaemonFixture d;
  const std::int64_t id = d.Submit(
      "name = \"downpour\"\n[data]\nformat = \"synthetic\"\nrows = 20000\n"
      "[train]\nepochs = 0\nsteps = 60000\nbatch_size = 16\neval_every = 5000\n"
      "[cluster]\nworkers = 2\nmode = \"async\"\nservers = 1\ntimeout_seconds = 30\n"
      "[checkpoint]\nevery_steps = 200\n[restart]\nmax_restarts = 1\n");
  json job = d.WaitForStep(id, 100);
  BOOST_REQUIRE_MESSAGE(job["state"] == "running", job.dump());
  const pid_t victim = job["workers"][1]["pid"].get<pid_t>();
  const pid_t survivor = job["workers"][0]["pid"].get<pid_t>();
  const pid_t shard = job["workers"][2]["pid"].get<pid_t>();
  ::kill(victim, SIGKILL);
  for (int i = 0; i < 1500; ++i) {  // the restart count lives while the job does
    job = d.Status(id);
    if (job["restarts"] == 1 || job["state"] != "running") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  BOOST_TEST(job["restarts"] == 1, job.dump());
  BOOST_TEST(job["state"] == "running", job.dump());
  job = d.Wait(id);
  BOOST_TEST(job["state"] == "succeeded", job.dump());
  BOOST_TEST(job["restarts"] == 1, job.dump());  // also once the job has ended
  // The job never stopped: no recovery, and the survivor and the shard are the same processes.
  // The restart is an event that changes no state.
  int alone = 0;
  for (const json& e : job["events"]) {
    BOOST_TEST(e["to"] != "recovering", job.dump());
    const std::string reason = e["reason"];
    if (reason.find("started again alone") != std::string::npos) {
      ++alone;
      BOOST_TEST(e["from"] == "running");
      BOOST_TEST(e["to"] == "running");
      BOOST_TEST(reason.find("restart 1 of 1: worker rank 1") == 0, reason);
    }
  }
  BOOST_TEST(alone == 1, job.dump());
  std::multiset<int> ranks;
  for (const json& w : job["workers"]) {
    ranks.insert(w["rank"].get<int>());
    const pid_t pid = w["pid"].get<pid_t>();
    if (pid == victim) BOOST_TEST(w["signal"] == 9, job.dump());
    if (pid == survivor || pid == shard) BOOST_TEST(w["exit_status"] == 0, job.dump());
  }
  BOOST_TEST(ranks.count(0) == 1u, job.dump());
  BOOST_TEST(ranks.count(1) == 2u, job.dump());  // the killed one and its replacement
  BOOST_TEST(ranks.count(2) == 1u, job.dump());
  // The replacement resumed from a checkpoint rather than from step 0, and said so.
  const ProcessResult logs =
      RunProcess({EnvPath("DTRAIN_BIN"), "--socket", d.socket(), "logs", std::to_string(id)},
                 d.dir().Path(""));
  BOOST_TEST(logs.out.find("started again alone") != std::string::npos, logs.out);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace distributed_test
}  // namespace dtrain::testing
