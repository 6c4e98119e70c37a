// Training-step overhead: one full step of MLP 784-512-256-10 (batch 128, one thread: gather +
// convert a uint8 batch, forward, backward, SGD update) beside the time math::Gemm alone takes
// on exactly that step's eight GEMM shapes (through the library it chose: math::DescribeGemm,
// printed), measured interleaved in one run, on Fashion-MNIST. Prints the ratio GEMM / step: the
// share of the step spent in GEMM (target >= 0.80).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "bench/fashion_mnist.h"
#include "bench/median.h"
#include "core/data/dataset.h"
#include "core/math/blas_kernels.h"
#include "core/math/gemm.h"
#include "core/model/model.h"
#include "core/optim/optimizer.h"

namespace {

using namespace dtrain;
using Clock = std::chrono::steady_clock;

using dtrain::bench::Median;

struct GemmShape {
  math::Trans ta, tb;
  int m, n, k;
};

}  // namespace

int main(int argc, char** argv) {
  math::UseBestBlasKernels();
  const int reps = argc > 1 ? std::atoi(argv[1]) : 200;
  const int batch = 128;
  math::SetBlasThreads(1);

  model::Model model(bench::FashionMlp({512, 256}));

  // Real uint8 pixels, so the step includes the batch conversion training does.
  const data::Dataset set = bench::LoadFashionTrain();
  const data::Scaling scaling = data::ConstantScaling(255.0f);

  math::FloatBuffer params(model.NumParams()), grad(model.NumParams());
  model.Init(params, 1);
  auto sgd = optim::MakeOptimizer({}, 0, model.NumParams());
  model::Workspace ws(model, batch);
  math::FloatBuffer x(static_cast<std::size_t>(batch) * 784);
  std::vector<float> y(batch);
  std::vector<std::uint32_t> order(set.rows);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), std::mt19937(3));

  // The eight GEMMs of that step: three forward, three dW, two dX.
  std::vector<GemmShape> shapes;
  for (const model::LayerView& l : model.layers()) {
    shapes.push_back({math::Trans::kNo, math::Trans::kNo, batch, l.out, l.in});
    shapes.push_back({math::Trans::kYes, math::Trans::kNo, l.in, l.out, batch});
  }
  for (std::size_t i = 1; i < model.layers().size(); ++i) {
    const model::LayerView& l = model.layers()[i];
    shapes.push_back({math::Trans::kNo, math::Trans::kYes, batch, l.in, l.out});
  }
  math::FloatBuffer ga(1 << 20, 0.01f), gb(1 << 20, 0.02f), gc(1 << 20);
  auto gemm_only = [&] {
    for (const GemmShape& s : shapes) {
      const int lda = s.ta == math::Trans::kNo ? s.k : s.m;
      const int ldb = s.tb == math::Trans::kNo ? s.n : s.k;
      math::Gemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f, ga.data(), lda, gb.data(), ldb, 0.0f,
                 gc.data(), s.n);
    }
  };
  std::size_t cursor = 0;
  auto full_step = [&] {
    if (cursor + batch > order.size()) cursor = 0;
    data::GatherBatch(set, scaling, {order.data() + cursor, static_cast<std::size_t>(batch)},
                      x.data(), y.data());
    cursor += batch;
    model.ForwardBackward(params.data(), x.data(), y.data(), batch, 0.0f, grad.data(), ws);
    sgd->Step(params, grad, 0.01f);
  };

  for (int i = 0; i < 20; ++i) {  // warm up caches, page in buffers
    gemm_only();
    full_step();
  }
  std::vector<double> step_ms, gemm_ms;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    full_step();
    auto t1 = Clock::now();
    gemm_only();
    auto t2 = Clock::now();
    step_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    gemm_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  const double step = Median(step_ms), gemm = Median(gemm_ms);
  std::printf("MLP 784-512-256-10, batch %d, 1 thread, %d interleaved reps (medians)\n%s\n", batch,
              reps, math::DescribeGemm().c_str());
  std::printf("  full training step   %8.3f ms   %8.0f samples/s\n", step, batch / step * 1e3);
  std::printf("  GEMM alone           %8.3f ms   (same 8 GEMM shapes)\n", gemm);
  std::printf("  gemm/step ratio      %8.3f      (target >= 0.80)\n", gemm / step);
  return 0;
}
