// Design probe for the one-host synchronous step (issue 5's 1.8x target): what 2 worker processes
// x 1 thread reach when they share memory beyond a link, beside 1 worker x 1 thread, on the model
// and data of bench_sync_scaling (MLP 784-512-256-10, batch 128 per worker, Fashion-MNIST, SGD).
// It does not run dtrain's training loop or strategies: its step is ForwardBackward plus one of
// these, so that a design can be measured before it is built.
//
//   shared params  one parameter vector in a MAP_SHARED mapping, both gradients too; after a
//                  barrier each worker averages its half of the gradient and applies SGD to that
//                  half of the parameters in place; a second barrier ends the step.
//   shared grads   both gradients shared, parameters private; each worker averages the whole
//                  gradient and applies SGD to its own copy in the same pass.
//   mean, then SGD as "shared grads", but the mean lands in a buffer of its own and SGD is a
//                  second pass (what an optimizer other than plain SGD would need).
//
// Barriers spin on counters in the mapping, yielding the core between looks. Rounds alternate
// the one-worker baseline with each design; each prints samples/s and the speed-up.
// Usage: bench_shared_step_probe [ROUNDS] [STEPS]
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench/fashion_mnist.h"
#include "bench/median.h"
#include "core/data/dataset.h"
#include "core/math/gemm.h"
#include "core/model/model.h"

namespace {

using namespace dtrain;
using Clock = std::chrono::steady_clock;

enum class Design { kAlone, kSharedParams, kSharedGrads, kMeanThenSgd };
constexpr const char* kDesignNames[] = {"1 worker", "shared params", "shared grads",
                                        "mean, then SGD"};
constexpr int kBatch = 128;
constexpr float kLearningRate = 0.01f;

// Step counters of every worker, one cache line each.
struct Counters {
  struct alignas(64) Slot {
    std::atomic<std::uint64_t> value{0};
  };
  Slot arrived[2];
  Slot updated[2];
};

void Await(const Counters::Slot* slots, int world, std::uint64_t step) {
  for (int r = 0; r < world; ++r) {
    while (slots[r].value.load(std::memory_order_acquire) < step) ::sched_yield();
  }
}

// One worker's `steps` steps; returns its seconds.
double Work(const data::Dataset& set, const model::Model& model, Design design, int rank,
            int world, int steps, Counters& counters, float* shared_params, float* grads) {
  math::SetBlasThreads(1);
  const std::size_t n = model.NumParams();
  model::Workspace ws(model, kBatch);
  std::vector<float> x(static_cast<std::size_t>(kBatch) * 784), y(kBatch);
  std::vector<std::uint32_t> rows(kBatch);
  std::mt19937 rng(static_cast<unsigned>(rank) + 7u);
  std::vector<float> own_params(shared_params, shared_params + n), mean(n);
  float* params = design == Design::kSharedParams || design == Design::kAlone
                      ? shared_params
                      : own_params.data();
  float* grad = grads + static_cast<std::size_t>(rank) * n;
  const float* g0 = grads;
  const float* g1 = grads + n;
  const float scale = 1.0f / static_cast<float>(world);
  const std::size_t lo = n * static_cast<std::size_t>(rank) / static_cast<std::size_t>(world);
  const std::size_t hi = n * static_cast<std::size_t>(rank + 1) / static_cast<std::size_t>(world);
  const data::Scaling pixels = data::ConstantScaling(255.0f);

  const auto start = Clock::now();
  for (int s = 1; s <= steps; ++s) {
    for (std::uint32_t& r : rows) r = static_cast<std::uint32_t>(rng() % set.rows);
    data::GatherBatch(set, pixels, rows, x.data(), y.data());
    model.ForwardBackward(params, x.data(), y.data(), kBatch, 0.0f, grad, ws);
    if (design == Design::kAlone) {
      for (std::size_t i = 0; i < n; ++i) params[i] -= kLearningRate * grad[i];
      continue;
    }
    const auto step = static_cast<std::uint64_t>(s);
    counters.arrived[rank].value.store(step, std::memory_order_release);
    Await(counters.arrived, world, step);
    switch (design) {
      case Design::kSharedParams:
        for (std::size_t i = lo; i < hi; ++i) params[i] -= kLearningRate * ((g0[i] + g1[i]) * scale);
        break;
      case Design::kSharedGrads:
        for (std::size_t i = 0; i < n; ++i) params[i] -= kLearningRate * ((g0[i] + g1[i]) * scale);
        break;
      case Design::kMeanThenSgd:
        for (std::size_t i = 0; i < n; ++i) mean[i] = (g0[i] + g1[i]) * scale;
        for (std::size_t i = 0; i < n; ++i) params[i] -= kLearningRate * mean[i];
        break;
      case Design::kAlone:
        break;
    }
    // Nobody overwrites a gradient (or reads parameters) the other still needs.
    counters.updated[rank].value.store(step, std::memory_order_release);
    Await(counters.updated, world, step);
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Samples per second of one run of `design` (1 worker for kAlone, 2 otherwise).
double Run(const data::Dataset& set, Design design, int steps) {
  const model::Model model(bench::FashionMlp({512, 256}));
  const int world = design == Design::kAlone ? 1 : 2;
  const std::size_t n = model.NumParams();
  const std::size_t floats_offset = 4096;  // past the counters, page-aligned
  const std::size_t bytes = floats_offset + 3 * n * sizeof(float);
  void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (map == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  auto* counters = new (map) Counters{};
  float* params = reinterpret_cast<float*>(static_cast<char*>(map) + floats_offset);
  float* grads = params + n;
  model.Init({params, n}, 1);

  int fds[2];
  if (::pipe(fds) != 0) std::exit(1);
  for (int r = 0; r < world; ++r) {
    if (::fork() == 0) {
      const double seconds = Work(set, model, design, r, world, steps, *counters, params, grads);
      const bool written = ::write(fds[1], &seconds, sizeof seconds) == sizeof seconds;
      ::_exit(written ? 0 : 1);
    }
  }
  double slowest = 0.0;
  for (int r = 0; r < world; ++r) {
    double seconds = 0.0;
    if (::read(fds[0], &seconds, sizeof seconds) != sizeof seconds) {
      std::fprintf(stderr, "worker %d failed\n", r);
      std::exit(1);
    }
    slowest = std::max(slowest, seconds);
  }
  while (::wait(nullptr) > 0) {
  }
  ::close(fds[0]);
  ::close(fds[1]);
  ::munmap(map, bytes);
  return static_cast<double>(kBatch) * world * steps / slowest;
}

using dtrain::bench::Median;

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 500;
  if (rounds < 1 || steps < 1) {
    std::fprintf(stderr, "usage: bench_shared_step_probe [ROUNDS] [STEPS]\n");
    return 2;
  }
  const data::Dataset set = bench::LoadFashionTrain();
  constexpr Design kDesigns[] = {Design::kSharedParams, Design::kSharedGrads,
                                 Design::kMeanThenSgd};
  std::vector<double> alone;
  std::vector<std::vector<double>> speedups(std::size(kDesigns));
  for (int round = 1; round <= rounds; ++round) {
    std::printf("round %d:", round);
    for (std::size_t d = 0; d < std::size(kDesigns); ++d) {
      const double one = Run(set, Design::kAlone, steps);
      const double two = Run(set, kDesigns[d], steps);
      alone.push_back(one);
      speedups[d].push_back(two / one);
      std::printf("  %s %.2fx", kDesignNames[static_cast<int>(kDesigns[d])], two / one);
    }
    std::printf("\n");
  }
  std::printf("MLP 784-512-256-10, batch %d per worker, 1 thread each, %d steps, %d rounds "
              "(medians of per-round ratios)\n",
              kBatch, steps, rounds);
  std::printf("  1 worker             %8.0f samples/s\n", Median(alone));
  for (std::size_t d = 0; d < std::size(kDesigns); ++d) {
    std::printf("  2 workers, %-15s speed-up %.2f x\n",
                kDesignNames[static_cast<int>(kDesigns[d])], Median(speedups[d]));
  }
  return 0;
}
