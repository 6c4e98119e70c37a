// Jobs whose replicas compress what they exchange over the ring ([cluster] compression): sync's
// gradients, local's averages; as real processes through `dtrain run` and a real dtraind. Each is
// held against an in-process reference that trains the same replicas, as threads over an
// in-process ring, with the same compression of the same gradients: the processes must end with
// its very bits. A run interrupted and resumed (its checkpoint holds every replica's
// error-feedback residual, and local's last average) ends where a straight run ends, overlapped
// (bucket_bytes: each bucket compressed during the backward pass) too, and a killed replica's job
// recovers.
#include <signal.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "cmd/run_checks.h"
#include "common/process.h"
#include "common/temp_dir.h"
#include "config/job_file.h"
#include "core/dist/local_link.h"
#include "core/math/gemm.h"
#include "daemon/runner/training_session.h"
#include "integration/daemon_fixture.h"
#include "integration/finished_run.h"
#include "integration/in_process_job.h"
#include "integration/interrupted_run.h"

namespace dtrain::testing {
namespace compressed_test {

using json = nlohmann::json;

// 2880 rows = 30 global batches of 96 = 2 x 48 = 4 x 24; a 64 x 64 layer for PowerSGD to compress.
// `mode`: "sync", or "local" with an average every 4 steps.
std::string CompressedJob(int workers, const std::string& compression, long long steps = 40,
                          const std::string& mode = "sync") {
  const std::string averaging = mode == "local" ? "average_every = 4\n" : "";
  return "name = \"compressed\"\n"
         "[data]\nformat = \"synthetic\"\nsynthetic = \"blobs\"\nrows = 2880\nclasses = 3\n"
         "[model]\ntype = \"mlp\"\nhidden = [64, 64]\nactivation = \"tanh\"\n"
         "[train]\nepochs = 0\nsteps = " +
         std::to_string(steps) + "\neval_every = 20\nbatch_size = " + std::to_string(96 / workers) +
         "\nseed = 5\n[optimizer]\nlr = 0.1\n[cluster]\nworkers = " + std::to_string(workers) +
         "\nmode = \"" + mode + "\"\n" + averaging + compression +
         "[checkpoint]\nevery_steps = 20\n";
}

// The job's replicas as threads of this process over an in-process ring, each with the strategy
// TrainingSession gives a compressed job (one worker's too): the final parameters (every
// replica's the same; a local job's run ends right after an average).
std::vector<float> InProcessReference(const TempDir& dir, const std::string& text) {
  const InProcessJob reference = LoadInProcessJob(dir, text);
  const config::JobConfig& job = reference.job;
  const runner::JobData& data = reference.data;
  const model::ModelSpec& spec = data.spec;
  const int world = job.cluster.workers;
  math::SetBlasThreads(1);
  std::vector<dist::RingLinks> links = dist::MakeLocalRing(world);
  std::vector<Result<std::vector<float>>> finals(static_cast<std::size_t>(world),
                                                 Status::Error("not run"));
  std::vector<std::thread> replicas;
  for (int r = 0; r < world; ++r) {
    replicas.emplace_back([&, r] {
      const auto i = static_cast<std::size_t>(r);
      const train::TrainOptions options = runner::ReplicaOptions(job, spec, r);
      model::LocalNetwork network(spec, train::Trainer::Capacity(options), 1);
      dist::RingAllReduce ring(r, world, links[i].left, links[i].right);
      const std::unique_ptr<train::Strategy> strategy = runner::MakeCompressedRing(job, spec, ring);
      train::Trainer trainer(network, options, data.train, nullptr, data.scaling, *strategy);
      trainer.InitParams();
      train::NullListener quiet;
      const Result<train::StopReason> why = trainer.Run(quiet);
      if (!why.ok()) {
        finals[i] = why.status();
        return;
      }
      finals[i] = std::vector<float>(trainer.params().begin(), trainer.params().end());
    });
  }
  for (std::thread& t : replicas) t.join();
  for (const auto& f : finals) BOOST_REQUIRE_MESSAGE(f.ok(), f.status().message());
  for (std::size_t r = 1; r < finals.size(); ++r) {
    BOOST_REQUIRE(finals[r].value() == finals[0].value());
  }
  return finals[0].value();
}

const std::string kMethods[] = {
    "compression = \"powersgd\"\ncompression_rank = 2\n",
    "compression = \"topk\"\ncompression_fraction = 0.01\n",
    "compression = \"bf16\"\n",
};

BOOST_AUTO_TEST_SUITE(compressed_jobs, *boost::unit_test::label("long"))

BOOST_AUTO_TEST_CASE(jobs_of_1_2_and_4_processes_end_with_the_bits_of_the_in_process_reference) {
  TempDir dir;
  int runs = 0;
  for (const std::string& method : kMethods) {
    for (int n : {1, 2, 4}) {
      BOOST_TEST_CONTEXT(method << n << " workers") {
        const std::string text = CompressedJob(n, method);
        const Finished run = RunJob(dir, "run" + std::to_string(++runs), text);
        BOOST_TEST((run.params == InProcessReference(dir, text)));
        CheckReplicasAgree(run, n);
        if (method.find("powersgd") != std::string::npos) {
          // The lead replica logs each tensor's plan as it starts: rank 2 of a 64 x 64 matrix.
          const auto planned = std::count_if(run.logs.begin(), run.logs.end(), [](const auto& row) {
            return row.line.starts_with("compression powersgd: ") &&
                   row.line.ends_with(" 64x64: low rank, 16384 -> 1024 bytes a step");
          });
          BOOST_TEST(planned == 1);
        }
        if (n == 1) continue;  // one worker compresses too, but sends nothing
        BOOST_TEST_MESSAGE(method << n << " workers: compression_ratio "
                                  << run.worst.at("compression_ratio") << ", wire_bytes "
                                  << run.worst.at("wire_bytes"));
        BOOST_TEST(run.worst.at("wire_bytes") > 0.0);
        BOOST_TEST(run.worst.count("compression_seconds") == 1u);
        if (method.find("bf16") == std::string::npos) {
          // Far less than the uncompressed ring would have sent (bf16 halves values, but its
          // all-gather sends more of them as the workers grow).
          BOOST_TEST(run.worst.at("compression_ratio") > 4.0);
        }
      }
    }
  }
}

// 512-byte buckets cut the MLP's three layers apart: each is compressed and exchanged on its own
// during the backward pass. 2 and 4 processes end with the bits of the reference, whose replicas
// overlap the same buckets, and each worker says how much of its exchange the pass did not hide.
BOOST_AUTO_TEST_CASE(overlapped_jobs_of_2_and_4_processes_end_with_the_bits_of_the_reference) {
  TempDir dir;
  int runs = 0;
  for (const std::string& method : {kMethods[0], kMethods[1]}) {
    for (int n : {2, 4}) {
      BOOST_TEST_CONTEXT(method << n << " workers") {
        const std::string text = CompressedJob(n, method + "bucket_bytes = 512\n");
        const Finished run = RunJob(dir, "overlapped" + std::to_string(++runs), text);
        BOOST_TEST((run.params == InProcessReference(dir, text)));
        CheckReplicasAgree(run, n);
        BOOST_TEST(CountLines(run,
                              "data plane: ring over shared memory, gradients compressed and "
                              "exchanged in 3 buckets during the backward pass") == n);
        BOOST_TEST(run.worst.count("exposed_comm_seconds") == 1u);
        BOOST_TEST(run.worst.at("compression_ratio") > 4.0);
      }
    }
  }
}

// Mode "local" compresses each average's change: 1 and 2 processes end with the reference's bits
// (the run ends right after an average), and the averages send less than the parameters.
BOOST_AUTO_TEST_CASE(
    local_jobs_of_1_and_2_processes_end_with_the_bits_of_the_in_process_reference) {
  TempDir dir;
  int runs = 0;
  for (const std::string& method : kMethods) {
    for (int n : {1, 2}) {
      BOOST_TEST_CONTEXT(method << n << " workers") {
        const std::string text = CompressedJob(n, method, 40, "local");
        const Finished run = RunJob(dir, "local" + std::to_string(++runs), text);
        BOOST_TEST((run.params == InProcessReference(dir, text)));
        CheckReplicasAgree(run, n);
        if (n == 1) continue;
        BOOST_TEST(run.worst.at("wire_bytes") > 0.0);
        BOOST_TEST(run.worst.count("compression_seconds") == 1u);
        BOOST_TEST(run.worst.at("compression_ratio") > 1.5);
      }
    }
  }
}

// Interrupted by SIGINT (the replicas agree on a step to stop at and each hands its residual to
// the checkpoint), then resumed to a step chosen after the stop: the bits of a straight run to
// that step, parameters, optimizer state and every replica's residual. Checkpoints every 20
// steps, or every few milliseconds (the writer proposes, the replicas agree on the step).
// `state_vectors`: what the checkpoint holds beside plain SGD's (none) without PowerSGD's Q;
// `methods`: the compression keys of each job tried.
void CheckInterruptedAndResumed(const std::string& mode, std::size_t state_vectors,
                                std::span<const std::string> methods = kMethods) {
  TempDir dir;
  for (const std::string& method : methods) {
    BOOST_TEST_CONTEXT(method) {
      const auto job = [&](const std::string& policy) {
        std::string text = CompressedJob(2, method, 1'000'000, mode);
        text.replace(text.find("every_steps = 20\n"), std::string("every_steps = 20\n").size(),
                     policy);
        return text;
      };
      InterruptAndResumeEachPolicy(dir, job, 40, [&](const Resumed& r) {
        BOOST_TEST(r.straight.optimizer_state.size() ==
                   state_vectors + (method.find("powersgd") != std::string::npos ? 1u : 0u));
        BOOST_TEST(cli::run_checks::SameState(r.straight, r.resumed),
                   "the resumed run differs from the straight run");
      });
    }
  }
}

BOOST_AUTO_TEST_CASE(
    an_interrupted_and_resumed_compressed_run_ends_with_the_bits_of_a_straight_run) {
  // Plain SGD keeps no state: both replicas' residuals (and PowerSGD's Q) are all there is.
  CheckInterruptedAndResumed("sync", 2);
}

// Overlapped: each bucket's part of the residual and of the Qs, checkpointed as one.
BOOST_AUTO_TEST_CASE(
    an_interrupted_and_resumed_overlapped_powersgd_run_ends_with_the_bits_of_a_straight_run) {
  const std::string overlapped[] = {kMethods[0] + "bucket_bytes = 512\n"};
  CheckInterruptedAndResumed("sync", 2, overlapped);
}

// Local's replicas stop right after an average; the checkpoint adds the last average's
// parameters.
BOOST_AUTO_TEST_CASE(
    an_interrupted_and_resumed_compressed_local_run_ends_with_the_bits_of_a_straight_run) {
  CheckInterruptedAndResumed("local", 3);
}

// A job of two compressing workers (`mode`: its cluster.mode line and keys) whose worker 1 is
// killed: the new attempt resumes from a checkpoint holding both replicas' residuals and trains on.
void CheckKilledWorkerRecovers(const std::string& mode) {
  DaemonFixture d;
  const std::int64_t id = d.Submit(
      "name = \"long\"\n[data]\nformat = \"synthetic\"\nrows = 20000\n"
      "[model]\ntype = \"mlp\"\nhidden = [64, 64]\n"
      "[train]\nepochs = 1000000\nbatch_size = 16\n[cluster]\nworkers = 2\n" +
      mode +
      "compression = \"powersgd\"\ntimeout_seconds = 30\n[checkpoint]\nevery_steps = 50\n"
      "[restart]\nmax_restarts = 1\n");
  json job = d.WaitForStep(id, 60);
  BOOST_REQUIRE(job["state"] == "running");
  ::kill(job["workers"][1]["pid"].get<pid_t>(), SIGKILL);
  job = d.WaitForRecovery(id, 4);
  BOOST_TEST(job["restarts"] == 1, job.dump());
  job = d.WaitForStep(id, job["step"].get<std::int64_t>() + 60);
  BOOST_TEST(job["state"] == "running", job.dump());
  d.Request({{"type", "cancel"}, {"id", id}});
  BOOST_TEST(d.Wait(id)["restarts"] == 1);
}

BOOST_AUTO_TEST_CASE(a_killed_compressing_worker_stops_its_peer_and_the_job_recovers) {
  CheckKilledWorkerRecovers("mode = \"sync\"\n");
}

BOOST_AUTO_TEST_CASE(a_killed_compressing_local_worker_stops_its_peer_and_the_job_recovers) {
  CheckKilledWorkerRecovers("mode = \"local\"\naverage_every = 5\n");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace compressed_test
}  // namespace dtrain::testing
