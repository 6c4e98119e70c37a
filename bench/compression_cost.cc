// What compressing a gradient costs against the step that computes it: one replica of the MLP
// 784-2048-2048-2048-10 (10.5 M parameters, batch 128, one thread) takes its forward-backward
// pass, and a GradientCompressor of each method encodes and decodes that gradient (alone: a
// one-replica exchange, no network), measured interleaved in one run. Prints the median seconds
// of each and compression / step (issue 44's goal for PowerSGD: at most 0.10), with the bytes a
// replica sends per step and the plan's ratio.
// Usage: bench_compression_cost [REPS]   (default 15)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/cpu_model.h"
#include "bench/fashion_mnist.h"
#include "bench/median.h"
#include "core/compress/gradient_compressor.h"
#include "core/math/blas_kernels.h"
#include "core/math/gemm.h"
#include "core/model/model.h"

namespace {

using namespace dtrain;
using Clock = std::chrono::steady_clock;

// One replica: its Mean and Gather leave the data as it is.
class Alone final : public compress::GradientExchange {
 public:
  int rank() const override { return 0; }
  int world() const override { return 1; }
  Status Mean(std::span<float>) override { return Status::Ok(); }
  Status Gather(std::span<float>) override { return Status::Ok(); }
};

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

}  // namespace

int main(int argc, char** argv) {
  math::UseBestBlasKernels();
  const int reps = argc > 1 ? std::atoi(argv[1]) : 15;
  const int batch = 128;
  math::SetBlasThreads(1);
  const model::Model model(bench::FashionMlp({2048, 2048, 2048}));
  const data::Dataset set = bench::LoadFashionTrain();
  math::FloatBuffer params(model.NumParams()), grad(model.NumParams());
  model.Init(params, 1);
  model::Workspace ws(model, batch);
  std::vector<float> x(static_cast<std::size_t>(batch) * 784), y(batch);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(set.bytes[i]) / 255.0f;
  std::copy_n(set.labels.begin(), batch, y.begin());

  struct Method {
    const char* name;
    compress::Settings settings;
  };
  const std::vector<Method> methods = {
      {"bf16", {.method = compress::Method::kBf16}},
      {"powersgd rank 4", {.method = compress::Method::kPowerSgd, .rank = 4}},
      {"topk 0.001", {.method = compress::Method::kTopK, .fraction = 0.001}}};
  std::vector<compress::GradientCompressor> compressors;
  for (const Method& m : methods) {
    compressors.emplace_back(compress::PlanCompression(model.Tensors(), m.settings), m.settings, 1);
  }
  Alone alone;
  std::vector<double> step;
  std::vector<std::vector<double>> coding(methods.size());
  std::vector<float> g(model.NumParams());
  for (int rep = 0; rep < reps; ++rep) {
    const Clock::time_point start = Clock::now();
    model.ForwardBackward(params.data(), x.data(), y.data(), batch, 0.0f, grad.data(), ws);
    step.push_back(Seconds(start));
    for (std::size_t m = 0; m < methods.size(); ++m) {
      g.assign(grad.begin(), grad.end());
      const double before = compressors[m].stats().seconds;
      if (!compressors[m].Exchange(rep, g, alone).ok()) return 1;
      coding[m].push_back(compressors[m].stats().seconds - before);
    }
  }
  std::printf("%s; MLP 784-2048-2048-2048-10 (%zu parameters), batch %d, one thread, %d reps\n",
              bench::CpuModel().c_str(), model.NumParams(), batch, reps);
  const double pass = bench::Median(step);
  std::printf("%-18s %12s %10s %14s %8s\n", "method", "seconds", "/ step", "bytes sent", "ratio");
  std::printf("%-18s %12.4f %10s %14zu %8s\n", "forward-backward", pass, "1", model.NumParams() * 4,
              "1");
  for (std::size_t m = 0; m < methods.size(); ++m) {
    const auto& plan = compressors[m].plan();
    const std::size_t sent = compress::PlanSentFloats(plan) * 4;
    const double seconds = bench::Median(coding[m]);
    std::printf("%-18s %12.4f %10.3f %14zu %8.1f\n", methods[m].name, seconds, seconds / pass, sent,
                static_cast<double>(compress::PlanFloats(plan) * 4) / static_cast<double>(sent));
  }
  return 0;
}
