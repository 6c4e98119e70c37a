// Synchronous data-parallel scaling: samples/s of 2 worker processes x 1 thread each beside 1
// worker x 1 thread, MLP 784-512-256-10, batch 128 per worker, Fashion-MNIST, SGD. The 2 workers
// run as dtrain runs them on one host (MakeSyncStrategy: gradients shared in memory,
// HostSyncStrategy), and with the ring all-reduce over shared memory (ShmLink) and over loopback
// TCP. Rounds alternate between them; each worker times its own training (after the ring is
// connected and the data loaded); a round's time is its slowest worker's. Prints the speed-ups
// (target >= 1.8 on this 2-core machine).
//
// Beside them, in the same rounds, what bounds the speed-up here: the all-reduce of one step's
// gradient alone (2 processes, no compute) over each transport, and a raw full-duplex TCP
// exchange of the same bytes. With two cores and two busy workers, moving bytes costs CPU time
// that no overlap can hide, so 2 t1 / (t1 + t_comm) bounds the speed-up (t1: one worker's step);
// with t_raw in place of the ring's time it bounds any TCP all-reduce on this machine.
// Usage: bench_sync_scaling [ROUNDS] [STEPS]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "bench/fashion_mnist.h"
#include "bench/loopback_exchange.h"
#include "core/dist/host_sync_strategy.h"
#include "core/dist/loopback_ring.h"
#include "core/dist/sync_strategy.h"
#include "core/math/gemm.h"
#include "core/train/trainer.h"

namespace {

using namespace dtrain;
using Clock = std::chrono::steady_clock;
using bench::Median;

// How the workers of a round synchronise.
enum class Setup {
  kDefault,      // as dtrain does: MakeSyncStrategy (shared gradients when all share a host)
  kRing,         // SyncAllReduceStrategy: the ring all-reduce over the round's links
  kIndependent,  // `world` one-worker jobs side by side: what two busy cores give here at best
};

// Runs `world` worker processes for `steps` steps; returns the slowest worker's seconds.
double Round(const data::Dataset& set, int world, std::int64_t steps,
             dist::LinkTransport transport, Setup setup) {
  const int processes = world;
  if (setup == Setup::kIndependent) world = 1;
  auto ring = dist::LoopbackRing::Listen(world, transport);
  if (!ring.ok()) {
    std::fprintf(stderr, "%s\n", ring.status().message().c_str());
    std::exit(1);
  }
  std::vector<pid_t> children;
  std::vector<int> pipes;
  for (int r = 0; r < processes; ++r) {
    int fds[2];
    if (::pipe(fds) != 0) std::exit(1);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      math::SetBlasThreads(1);
      const model::Model model(bench::FashionMlp({512, 256}));
      const int rank = r % world;
      auto links = ring.value().Join(rank, std::chrono::seconds(30));
      if (!links.ok()) ::_exit(2);
      dist::RingAllReduce allreduce(rank, world, links.value().left, links.value().right);
      auto optimizer = optim::MakeOptimizer({}, 0, model.NumParams());
      std::unique_ptr<train::Strategy> sync;
      if (setup == Setup::kDefault) {
        auto made = dist::MakeSyncStrategy(allreduce, links.value(), std::move(optimizer), 0.0f,
                                           std::chrono::seconds(30));
        if (!made.ok()) ::_exit(5);
        sync = std::move(made).value();
      } else {
        sync = std::make_unique<dist::SyncAllReduceStrategy>(allreduce, std::move(optimizer), 0.0f);
      }
      train::TrainOptions options;
      options.epochs = 0;
      options.steps = steps;
      options.batch_size = 128;
      options.log_every = 1000000;
      options.rank = rank;
      options.world_size = world;
      options.sharding = data::ShardMode::kGlobalBatches;
      train::Trainer trainer(model, options, set, nullptr, data::ConstantScaling(255.0f), *sync);
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
  for (int r = 0; r < processes; ++r) {
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
  constexpr auto kShm = dist::LinkTransport::kAuto;  // every process here is on one host
  constexpr auto kTcp = dist::LinkTransport::kTcp;
  std::vector<double> one, two_shared, two_shm, two_tcp, ring_shm, ring_tcp, raw;
  std::vector<double> speedup_shared, speedup_shm, speedup_tcp, speedup_alone;  // per round
  const double two_rows = static_cast<double>(steps * 2 * 128);
  for (int round = 0; round < rounds; ++round) {
    one.push_back(static_cast<double>(steps * 128) / Round(set, 1, steps, kTcp, Setup::kRing));
    speedup_alone.push_back(two_rows / Round(set, 2, steps, kTcp, Setup::kIndependent) /
                            one.back());
    two_shared.push_back(two_rows / Round(set, 2, steps, kShm, Setup::kDefault));
    two_shm.push_back(two_rows / Round(set, 2, steps, kShm, Setup::kRing));
    two_tcp.push_back(two_rows / Round(set, 2, steps, kTcp, Setup::kRing));
    speedup_shared.push_back(two_shared.back() / one.back());
    speedup_shm.push_back(two_shm.back() / one.back());
    speedup_tcp.push_back(two_tcp.back() / one.back());
    ring_shm.push_back(bench::RingSeconds(2, floats, ops, {}, kShm));
    ring_tcp.push_back(bench::RingSeconds(2, floats, ops, {}, kTcp));
    raw.push_back(bench::RawSeconds(floats * sizeof(float), ops, 0));
    std::fprintf(stderr,
                 "round %d: 1 worker %.0f/s, 2 independent %.2fx, 2 sharing gradients "
                 "%.0f/s (%.2fx), ring over shm %.0f/s (%.2fx), over tcp %.0f/s (%.2fx); ring "
                 "alone shm %.2f ms, tcp %.2f ms, raw tcp %.2f ms\n",
                 round + 1, one.back(), speedup_alone.back(), two_shared.back(),
                 speedup_shared.back(), two_shm.back(), speedup_shm.back(), two_tcp.back(),
                 speedup_tcp.back(), ring_shm.back() * 1e3, ring_tcp.back() * 1e3,
                 raw.back() * 1e3);
  }
  const double t1 = 128.0 / Median(one);
  const auto bound = [&](const std::vector<double>& comm) { return 2.0 * t1 / (t1 + Median(comm)); };
  std::printf("sync, MLP 784-512-256-10, batch 128 per worker, 1 thread each, %lld steps, "
              "%d rounds (medians; speed-ups: median of the per-round ratios)\n",
              static_cast<long long>(steps), rounds);
  std::printf("  1 worker                    %9.0f samples/s  (%.2f ms a step)\n", Median(one),
              t1 * 1e3);
  std::printf("  2 workers sharing gradients %9.0f samples/s  speed-up %.2f x  (target >= 1.8; "
              "dtrain's default on one host)\n",
              Median(two_shared), Median(speedup_shared));
  std::printf("  2 workers, ring over shm    %9.0f samples/s  speed-up %.2f x\n", Median(two_shm),
              Median(speedup_shm));
  std::printf("  2 workers, ring over tcp    %9.0f samples/s  speed-up %.2f x\n", Median(two_tcp),
              Median(speedup_tcp));
  std::printf("  2 one-worker jobs side by side (no communication): %.2f x\n",
              Median(speedup_alone));
  std::printf("  a step's all-reduce alone (%.2f MB): ring over shm %.2f ms, over tcp %.2f ms, "
              "raw TCP exchange %.2f ms\n",
              static_cast<double>(floats * sizeof(float)) / 1e6, Median(ring_shm) * 1e3,
              Median(ring_tcp) * 1e3, Median(raw) * 1e3);
  std::printf("  bound on this machine: %.2f x with the ring over shm, %.2f x over tcp, %.2f x with "
              "any TCP all-reduce\n",
              bound(ring_shm), bound(ring_tcp), bound(raw));
  return 0;
}
