// One worker's step with its batch split over 2 threads (model::LocalNetwork, the optimizer on
// the same threads) beside the same step on one thread and on one thread calling OpenBLAS with 2
// threads (what train.threads meant before), and on 1 and 2 threads with the optimizer's step
// fused into the gradient pass (ForwardBackwardStep, what `dtrain run` of a single job takes):
// MLP 784-512-256-10 (or softmax regression with `softmax`), batch 128, momentum SGD, on
// Fashion-MNIST, the settings interleaved rep by rep. Prints the median milliseconds of each
// part of the step (gather, forward+backward, optimizer; a fused step's is in fwd+bwd) and the
// speed-ups of the step.
// Usage: bench_batch_split [REPS] [mlp|softmax]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <tuple>
#include <vector>

#include "bench/fashion_mnist.h"
#include "bench/median.h"
#include "core/data/dataset.h"
#include "core/math/blas_kernels.h"
#include "core/math/gemm.h"
#include "core/model/network.h"
#include "core/optim/optimizer.h"

namespace {

using namespace dtrain;
using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct Setting {
  const char* name;
  int threads, blas_threads;
  bool step_in_pass;  // Network::ForwardBackwardStep, as the trainer of a single job takes it
  model::LocalNetwork net;
  std::unique_ptr<optim::Optimizer> opt;
  math::FloatBuffer params, grad;
  std::vector<double> gather, pass, step;
};

}  // namespace

int main(int argc, char** argv) {
  math::UseBestBlasKernels();
  const int reps = argc > 1 ? std::atoi(argv[1]) : 300;
  const bool softmax = argc > 2 && std::strcmp(argv[2], "softmax") == 0;
  const int batch = 128;
  math::SetBlasThreads(1);
  const model::ModelSpec spec = softmax ? bench::FashionMlp({}) : bench::FashionMlp({512, 256});
  const data::Dataset set = bench::LoadFashionTrain();
  const data::Scaling scaling = data::ConstantScaling(255.0f);
  optim::OptimizerOptions momentum;
  momentum.type = optim::OptimizerType::kMomentum;
  momentum.momentum = 0.9f;

  std::vector<std::unique_ptr<Setting>> settings;
  for (const auto& [name, threads, blas, in_pass] :
       {std::tuple{"1 thread", 1, 1, false},
        {"2 BLAS threads", 1, 2, false},
        {"2 threads, split", 2, 1, false},
        {"1 thread, fused", 1, 1, true},
        {"2 threads, fused", 2, 1, true}}) {
    auto s = std::unique_ptr<Setting>(new Setting{name,
                                                  threads,
                                                  blas,
                                                  in_pass,
                                                  model::LocalNetwork(spec, batch, threads),
                                                  nullptr,
                                                  {},
                                                  {},
                                                  {},
                                                  {},
                                                  {}});
    s->opt = optim::MakeOptimizer(momentum, 0, s->net.NumParams());
    s->opt->set_team(s->net.Team());
    s->params.resize(s->net.NumParams());
    s->grad.resize(s->net.NumParams());
    s->net.Init(s->params, 1);
    settings.push_back(std::move(s));
  }
  math::FloatBuffer x(static_cast<std::size_t>(batch) * 784);
  std::vector<float> y(batch);
  std::vector<std::uint32_t> order(set.rows);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), std::mt19937(3));
  std::size_t cursor = 0;
  for (int rep = -20; rep < reps; ++rep) {  // 20 reps of warm-up
    for (auto& s : settings) {
      if (cursor + batch > order.size()) cursor = 0;
      math::SetBlasThreads(s->blas_threads);
      const auto t0 = Clock::now();
      data::GatherBatch(set, scaling, {order.data() + cursor, static_cast<std::size_t>(batch)},
                        x.data(), y.data());
      const auto t1 = Clock::now();
      if (s->step_in_pass) {
        (void)s->net.ForwardBackwardStep(s->params.data(), x.data(), y.data(), batch, 0.0f,
                                         s->grad.data(), *s->opt, 0.01f);
      } else {
        (void)s->net.ForwardBackward(s->params.data(), x.data(), y.data(), batch, 0.0f,
                                     s->grad.data());
      }
      const auto t2 = Clock::now();
      // On the network's threads, as a trainer does; a fused step has been taken already.
      if (!s->step_in_pass) s->opt->Step(s->params, s->grad, 0.01f);
      const auto t3 = Clock::now();
      if (rep >= 0) {
        s->gather.push_back(Ms(t0, t1));
        s->pass.push_back(Ms(t1, t2));
        s->step.push_back(Ms(t0, t3));
      }
    }
    cursor += batch;
  }
  std::printf("%s, batch %d, momentum SGD, %d interleaved reps (median ms)\n",
              softmax ? "softmax 784-10" : "MLP 784-512-256-10", batch, reps);
  std::printf("%-17s  gather   fwd+bwd  optimizer  step     samples/s  vs 1 thread\n", "");
  const double one = bench::Median(settings[0]->step);
  for (auto& s : settings) {
    const double step = bench::Median(s->step), gather = bench::Median(s->gather),
                 pass = bench::Median(s->pass);
    std::printf("%-17s  %7.3f  %7.3f  %9.3f  %7.3f  %9.0f  %.2f\n", s->name, gather, pass,
                step - gather - pass, step, batch / step * 1e3, one / step);
  }
  return 0;
}
