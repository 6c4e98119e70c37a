// Synchronous data-parallel scaling: samples/s of 2 worker processes x 1 thread each (sync ring
// all-reduce over loopback TCP) beside 1 worker x 1 thread, MLP 784-512-256-10, batch 128 per
// worker, Fashion-MNIST, SGD. Rounds alternate between the two; each worker times its own
// training (after the ring is connected and the data loaded); a round's time is its slowest
// worker's. Prints the speed-up (target >= 1.8 on this 2-core machine).
//
// Beside it, in the same rounds, what bounds that speed-up here: the all-reduce of one step's
// gradient alone (2 processes, no compute) and a raw full-duplex TCP exchange of the same bytes.
// With two cores and two busy workers, moving bytes through loopback costs CPU time that no
// overlap can hide, so 2 t1 / (t1 + t_comm) bounds the speed-up (t1: one worker's step); with
// t_raw in place of the ring's time it bounds any TCP all-reduce on this machine.
// Usage: bench_sync_scaling [ROUNDS] [STEPS]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/fashion_mnist.h"
#include "bench/loopback_exchange.h"
#include "core/dist/loopback_ring.h"
#include "core/dist/sync_strategy.h"
#include "core/math/gemm.h"
#include "core/train/trainer.h"

namespace {

using namespace dtrain;
using Clock = std::chrono::steady_clock;
using bench::Median;

// Runs `world` worker processes for `steps` steps; returns the slowest worker's seconds.
double Round(const data::Dataset& set, int world, std::int64_t steps) {
  auto ring = dist::LoopbackRing::Listen(world);
  if (!ring.ok()) {
    std::fprintf(stderr, "%s\n", ring.status().message().c_str());
    std::exit(1);
  }
  std::vector<pid_t> children;
  std::vector<int> pipes;
  for (int r = 0; r < world; ++r) {
    int fds[2];
    if (::pipe(fds) != 0) std::exit(1);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      math::SetBlasThreads(1);
      const model::Model model(bench::FashionMlp({512, 256}));
      auto links = ring.value().Join(r, std::chrono::seconds(30));
      if (!links.ok()) ::_exit(2);
      dist::RingAllReduce allreduce(r, world, links.value().left, links.value().right);
      dist::SyncAllReduceStrategy sync(allreduce, world,
                                       optim::MakeOptimizer({}, 0, model.NumParams()), 0.0f);
      train::TrainOptions options;
      options.epochs = 0;
      options.steps = steps;
      options.batch_size = 128;
      options.log_every = 1000000;
      options.rank = r;
      options.world_size = world;
      options.sharding = data::ShardMode::kGlobalBatches;
      train::Trainer trainer(model, options, set, nullptr, data::ConstantScaling(255.0f), sync);
      trainer.InitParams();
      train::NullListener quiet;
      const auto start = Clock::now();
      if (!trainer.Run(quiet).ok()) ::_exit(3);
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (::write(fds[1], &seconds, sizeof seconds) != sizeof seconds) ::_exit(4);
      ::_exit(0);
    }
    ::close(fds[1]);
    children.push_back(pid);
    pipes.push_back(fds[0]);
  }
  double slowest = 0.0;
  for (int r = 0; r < world; ++r) {
    double seconds = 0.0;
    if (::read(pipes[r], &seconds, sizeof seconds) != sizeof seconds) {
      std::fprintf(stderr, "worker %d failed\n", r);
      std::exit(1);
    }
    ::close(pipes[r]);
    ::waitpid(children[r], nullptr, 0);
    slowest = std::max(slowest, seconds);
  }
  return slowest;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  const std::int64_t steps = argc > 2 ? std::atoll(argv[2]) : 300;
  const data::Dataset set = bench::LoadFashionTrain();
  // The flat gradient plus the two stop-vote floats the sync strategy sends with it.
  const std::size_t floats = model::Model(bench::FashionMlp({512, 256})).NumParams() + 2;
  const int ops = static_cast<int>(std::max<std::int64_t>(steps / 3, 10));
  std::vector<double> one, two, ring, raw;
  for (int round = 0; round < rounds; ++round) {
    one.push_back(static_cast<double>(steps * 128) / Round(set, 1, steps));
    two.push_back(static_cast<double>(steps * 2 * 128) / Round(set, 2, steps));
    ring.push_back(bench::RingSeconds(2, floats, ops, {}));
    raw.push_back(bench::RawSeconds(floats * sizeof(float), ops, 0));
  }
  const double t1 = 128.0 / Median(one);
  const double bound_ring = 2.0 * t1 / (t1 + Median(ring));
  const double bound_raw = 2.0 * t1 / (t1 + Median(raw));
  std::printf("sync ring, MLP 784-512-256-10, batch 128 per worker, 1 thread each, %lld steps, "
              "%d rounds (medians)\n", static_cast<long long>(steps), rounds);
  std::printf("  1 worker    %9.0f samples/s  (%.2f ms a step)\n", Median(one), t1 * 1e3);
  std::printf("  2 workers   %9.0f samples/s\n", Median(two));
  std::printf("  speed-up    %9.2f x   (target >= 1.8)\n", Median(two) / Median(one));
  std::printf("  a step's all-reduce alone (%.2f MB): ring %.2f ms, raw TCP exchange %.2f ms\n",
              static_cast<double>(floats * sizeof(float)) / 1e6, Median(ring) * 1e3,
              Median(raw) * 1e3);
  std::printf("  bound on this machine: %.2f x with this ring, %.2f x with any TCP all-reduce\n",
              bound_ring, bound_raw);
  return 0;
}
