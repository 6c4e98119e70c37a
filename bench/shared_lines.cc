// What the batch split pays for sharing its parameters between cores: the momentum step of the
// MLP's 535 040 parameters (784-512-256-10), taken by 2 threads of a math::ThreadTeam, each its
// half (Optimizer::StepPart, as the fused row split takes it), right after a pass in which
//   own half   each thread read only the half it then steps, or
//   all        both threads read every parameter (what the forward pass of a split batch does),
//   dropped    as "all", then each thread dropped the other's half from the caches
//              (math::DropFromCaches, what LocalNetwork's row split does), the drop timed too,
// beside the same step on 1 thread after it read them all; the four interleaved, medians.
// The gap between "all" and "own half" is the cost of writing cache lines the other core holds;
// where "dropped" is not below "all", dropping does not pay on that machine.
// Usage: bench_shared_lines [REPS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/median.h"
#include "core/math/buffer.h"
#include "core/math/cache_lines.h"
#include "core/math/part_range.h"
#include "core/math/thread_team.h"
#include "core/optim/optimizer.h"

namespace {

using namespace dtrain;
using Clock = std::chrono::steady_clock;
constexpr std::size_t kParams = 535040;

volatile float sink;

void Read(const math::FloatBuffer& params, math::PartRange r) {
  float sum = 0.0f;
  for (std::size_t i = r.begin; i < r.end; ++i) sum += params[i];
  sink = sum;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 2000;
  math::ThreadTeam team(2);
  math::FloatBuffer params(kParams, 1.0f), grad(kParams, 1e-3f);
  optim::OptimizerOptions momentum;
  momentum.type = optim::OptimizerType::kMomentum;
  auto optimizer = optim::MakeOptimizer(momentum, 0, kParams);
  const math::PartRange whole{0, kParams};
  auto step_halves = [&] {
    const auto t0 = Clock::now();
    team.Run([&](int part) {
      const math::PartRange r = math::PartOf(kParams, 2, part);
      const std::size_t n = r.end - r.begin;
      optimizer->StepPart(r.begin, {params.data() + r.begin, n}, {grad.data() + r.begin, n},
                          1e-6f);
    });
    optimizer->EndPartedStep();
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  };
  auto drop_other_half = [&] {
    team.Run([&](int part) {
      const math::PartRange other = math::PartOf(kParams, 2, 1 - part);
      math::DropFromCaches({params.data() + other.begin, other.end - other.begin});
    });
  };
  std::vector<double> own, all, dropped, one;
  for (int rep = 0; rep < reps; ++rep) {
    team.Run([&](int part) { Read(params, math::PartOf(kParams, 2, part)); });
    own.push_back(step_halves());
    team.Run([&](int) { Read(params, whole); });
    all.push_back(step_halves());
    team.Run([&](int) { Read(params, whole); });
    const auto t_drop = Clock::now();
    drop_other_half();
    const double drop_us = std::chrono::duration<double, std::micro>(Clock::now() - t_drop).count();
    dropped.push_back(drop_us + step_halves());
    Read(params, whole);
    const auto t0 = Clock::now();
    optimizer->Step(params, grad, 1e-6f);
    one.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  const double m_own = bench::Median(own), m_all = bench::Median(all), m_one = bench::Median(one);
  std::printf("momentum step of %zu parameters, %d interleaved reps (median us)\n", kParams, reps);
  std::printf("  2 threads, each read its own half   %7.1f\n", m_own);
  std::printf("  2 threads, both read all            %7.1f   %.2fx own half\n", m_all,
              m_all / m_own);
  const double m_dropped = bench::Median(dropped);
  std::printf("  2 threads, all read, other dropped  %7.1f   %.2fx own half (drop included)\n",
              m_dropped, m_dropped / m_own);
  std::printf("  1 thread                            %7.1f   2 threads (all) vs 1: %.2fx, "
              "(dropped) vs 1: %.2fx\n",
              m_one, m_one / m_all, m_one / m_dropped);
  return 0;
}
