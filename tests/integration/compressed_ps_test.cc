// Jobs whose replicas compress their pushes to parameter servers ([cluster] compression "bf16" or
// "topk" with mode "async", or "sync" with allreduce "ps"), as real processes through `dtrain run`.
// A sync-ps job ends with the bits of an in-process reference that runs the same shards and
// replicas as threads (sync ps is deterministic), its workers agree, and it sends less than it
// would uncompressed; interrupted and resumed (its checkpoint holds every worker's residual) it
// ends with the bits of a straight run, and a checkpoint without residuals still resumes. An
// async job trains (its loss falls well below a uniform guess's) and puts fewer bytes on the wire
// than the same job uncompressed.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "cmd/run_checks.h"
#include "common/process.h"
#include "common/temp_dir.h"
#include "core/dist/replica_harness.h"
#include "core/dist/sync_ps_strategy.h"
#include "core/math/gemm.h"
#include "daemon/runner/training_session.h"
#include "daemon/store/store.h"
#include "integration/finished_run.h"
#include "integration/in_process_job.h"
#include "integration/interrupted_run.h"

namespace dtrain::testing {
namespace compressed_ps_test {

// 2880 rows = 30 global batches of 96 = 2 x 48; two shards.
std::string PsJob(const std::string& mode, const std::string& compression) {
  return "name = \"compressed-ps\"\n"
         "[data]\nformat = \"synthetic\"\nsynthetic = \"blobs\"\nrows = 2880\nclasses = 3\n"
         "[model]\ntype = \"mlp\"\nhidden = [64, 64]\nactivation = \"tanh\"\n"
         "[train]\nepochs = 0\nsteps = 40\neval_every = 10\nbatch_size = 48\nseed = 5\n"
         "[optimizer]\nlr = 0.1\n[cluster]\nworkers = 2\nservers = 2\n" +
         mode + compression + "[checkpoint]\nevery_steps = 20\n";
}

const std::string kSyncPs = "mode = \"sync\"\nallreduce = \"ps\"\n";
const std::string kMethods[] = {
    "compression = \"bf16\"\n",
    "compression = \"topk\"\ncompression_fraction = 0.05\n",
};

// The job's shards and replicas as threads of this process over in-process links, each replica
// with the strategy TrainingSession gives it: the shards' final parameters.
std::vector<float> InProcessSyncPs(const TempDir& dir, const std::string& text) {
  const InProcessJob reference = LoadInProcessJob(dir, text);
  const config::JobConfig& job = reference.job;
  const runner::JobData& data = reference.data;
  const model::ModelSpec& spec = data.spec;
  const model::Model model(spec);
  const int workers = job.cluster.workers, servers = job.cluster.Servers();
  math::SetBlasThreads(1);
  const dist::testing::PsLinks links = dist::testing::MakeLocalPsLinks(workers, servers);
  auto shards = dist::testing::MakeShards(model, job.train.seed, workers, servers,
                                          dist::PsMode::kSync, job.optimizer);
  std::vector<Status> failures(static_cast<std::size_t>(workers));
  const std::vector<Status> served =
      dist::testing::ServePs(links, shards, [&](int rank, std::span<dist::Link* const> mine) {
        const train::TrainOptions options = runner::ReplicaOptions(job, spec, rank);
        model::LocalNetwork network(spec, train::Trainer::Capacity(options), 1);
        dist::SyncPsStrategy ps(mine, model.NumParams(),
                                {.rank = rank,
                                 .workers = workers,
                                 .clip_norm = job.clip_norm,
                                 .compression = job.cluster.compression});
        train::Trainer trainer(network, options, data.train, nullptr, data.scaling, ps);
        trainer.InitParams();
        Status s = ps.Connect(trainer.params(), trainer.position().step);
        train::NullListener quiet;
        if (s.ok()) s = trainer.Run(quiet).status();
        if (s.ok()) s = ps.Finish();
        failures[static_cast<std::size_t>(rank)] = s;
      });
  for (const Status& s : served) BOOST_REQUIRE_MESSAGE(s.ok(), s.message());
  for (const Status& s : failures) BOOST_REQUIRE_MESSAGE(s.ok(), s.message());
  return dist::testing::ShardParams(shards);
}

// Worker `worker`'s values of metric `name`, in step order, from the run's store.
std::vector<double> MetricOf(const TempDir& dir, const std::string& run, const std::string& name,
                             int worker) {
  auto store = store::Store::Open(dir.Path(run + ".db"));
  BOOST_REQUIRE(store.ok());
  auto rows = store.value()->Metrics(1, name);
  BOOST_REQUIRE(rows.ok());
  std::vector<double> values;
  for (const store::MetricRow& m : rows.value()) {
    if (m.name == name && m.worker == worker) values.push_back(m.value);
  }
  return values;
}

double Sum(const std::vector<double>& values) {
  double sum = 0.0;
  for (double v : values) sum += v;
  return sum;
}

BOOST_AUTO_TEST_SUITE(compressed_ps_jobs)

BOOST_AUTO_TEST_CASE(a_sync_ps_job_ends_with_the_bits_of_the_in_process_reference) {
  TempDir dir;
  int runs = 0;
  for (const std::string& method : kMethods) {
    BOOST_TEST_CONTEXT(method) {
      const std::string text = PsJob(kSyncPs, method);
      const Finished run = RunJob(dir, "sync" + std::to_string(++runs), text);
      BOOST_TEST((run.params == InProcessSyncPs(dir, text)));
      CheckReplicasAgree(run, 2);
      // The lead replica logs each shard's slice of its pushes: both compressed.
      const auto planned = std::count_if(run.logs.begin(), run.logs.end(), [](const auto& row) {
        return row.line.starts_with("compression ") &&
               row.line.find(" shard ") != std::string::npos;
      });
      BOOST_TEST(planned == 2);
      BOOST_TEST(run.worst.count("compression_seconds") == 1u);
      BOOST_TEST(run.worst.at("compression_ratio") > 1.3);
    }
  }
}

// A sync-ps job of 2 workers training without end, checkpointing by `policy`.
std::string EndlessSyncPs(const std::string& method, const std::string& policy) {
  std::string text = PsJob(kSyncPs, method);
  const auto swap = [&text](const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
  };
  swap("\nsteps = 40\n", "\nsteps = 1000000\n");
  swap("every_steps = 20\n", policy);
  return text;
}

// Interrupted by SIGINT, then resumed to a step chosen after the stop: the bits of a straight run
// to that step, parameters and both workers' residuals (plain SGD keeps no other state), under
// each checkpoint policy.
BOOST_AUTO_TEST_CASE(an_interrupted_and_resumed_sync_ps_job_ends_with_the_bits_of_a_straight_run) {
  TempDir dir;
  for (const std::string& method : kMethods) {
    BOOST_TEST_CONTEXT(method) {
      const auto job = [&](const std::string& policy) { return EndlessSyncPs(method, policy); };
      InterruptAndResumeEachPolicy(dir, job, 20, [](const Resumed& r) {
        BOOST_TEST(r.straight.optimizer_state.size() == 2u);  // the 2 workers' residuals
        BOOST_TEST(cli::run_checks::SameState(r.straight, r.resumed),
                   "the resumed run differs from the straight run");
      });
    }
  }
}

// A checkpoint without residuals (as every sync-ps checkpoint was before they were kept) still
// resumes a compressed job: the residuals start at zero, and the job's next checkpoints hold them.
BOOST_AUTO_TEST_CASE(a_checkpoint_without_residuals_still_resumes) {
  TempDir dir;
  const std::string job = dir.Write("job.toml", EndlessSyncPs(kMethods[0], kCheckpointPolicies[0]));
  const std::string db = dir.Path("old.db");
  const std::int64_t stopped = RunUntilInterrupted(dir, job, db, 20);
  {
    // The newest checkpoint as it would have been written before: plain SGD's none.
    store::CheckpointData old = cli::run_checks::Final(db, 1);
    BOOST_REQUIRE_EQUAL(old.optimizer_state.size(), 2u);
    old.optimizer_state.clear();
    auto store = store::Store::Open(db);
    BOOST_REQUIRE(store.ok());
    BOOST_REQUIRE(store.value()->SaveCheckpoint(1, old, 5).ok());
  }
  const std::string until = "train.steps=" + std::to_string(stopped + 10);
  const ProcessResult resumed = RunProcess(
      {EnvPath("DTRAIN_BIN"), "run", "--resume", "1", "--db", db, "--set", until}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  const store::CheckpointData end = cli::run_checks::Final(db, 1);
  BOOST_TEST(end.step == stopped + 10);
  BOOST_TEST(end.optimizer_state.size() == 2u);
}

BOOST_AUTO_TEST_CASE(an_async_job_trains_and_sends_fewer_bytes_than_uncompressed) {
  TempDir dir;
  // Staleness bounded, so that a loaded machine's scheduling cannot make a replica's pushes
  // arbitrarily stale.
  const std::string async = "mode = \"async\"\nmax_staleness = 2\n";
  RunJob(dir, "plain", PsJob(async, ""));
  const double plain_bytes = Sum(MetricOf(dir, "plain", "bytes_sent", 0));
  BOOST_REQUIRE(plain_bytes > 0.0);
  int runs = 0;
  for (const std::string& method : kMethods) {
    BOOST_TEST_CONTEXT(method) {
      const std::string name = "async" + std::to_string(++runs);
      RunJob(dir, name, PsJob(async, method));
      // Well below the loss of a model that knows nothing of the 3 classes (uniform: ln 3).
      const std::vector<double> loss = MetricOf(dir, name, "eval_loss", 0);
      BOOST_REQUIRE(!loss.empty());
      BOOST_TEST_MESSAGE(method << "eval_loss " << loss.front() << " -> " << loss.back());
      BOOST_TEST(loss.back() < 0.6 * std::log(3.0));
      const double wire = Sum(MetricOf(dir, name, "wire_bytes", 0));
      BOOST_TEST_MESSAGE(method << "wire_bytes " << wire << " against " << plain_bytes);
      BOOST_TEST(wire > 0.0);
      BOOST_TEST(wire < 0.7 * plain_bytes);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace compressed_ps_test
}  // namespace dtrain::testing
