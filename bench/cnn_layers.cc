// The Fashion-MNIST CNN example's training step (batch 64, 1 BLAS thread unless told), layer by
// layer: each layer's forward and backward time, the whole step (forward, backward and an Adam
// update, as PyTorch's step in bench/pytorch_cnn.py), and the share of the step spent in GEMM
// (math::TakeGemmSeconds), medians over interleaved repetitions in one run, and the path each
// convolution and pooling took (onednn_paths.h). The last line is for scripts:
// "samples_per_sec N gemm_share S".
//   bench_cnn_layers [reps] [batch] [threads] [fp32|bf16]   (bf16: train.precision = "bf16")
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string_view>
#include <vector>

#include "bench/fashion_mnist.h"
#include "bench/median.h"
#include "core/math/blas_kernels.h"
#include "core/math/gemm.h"
#include "core/math/precision.h"
#include "core/model/model.h"
#include "core/model/onednn_paths.h"
#include "core/optim/optimizer.h"

namespace {

using namespace dtrain;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  math::UseBestBlasKernels();
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const int batch = argc > 2 ? std::atoi(argv[2]) : 64;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 1;
  math::SetBlasThreads(threads);
  if (argc > 4 && std::string_view(argv[4]) == "bf16") {
    if (const math::Bf16Support bf16 = math::NativeBf16(); !bf16.native) {
      std::fprintf(stderr, "bf16: %s\n", bf16.how.c_str());
      return 1;
    }
    math::SetPrecision(math::Precision::kBf16);
  }
  const model::Model model(bench::FashionCnn());
  math::FloatBuffer params(model.NumParams()), grad(model.NumParams());
  model.Init(params, 1);
  const auto adam =
      optim::MakeOptimizer({.type = optim::OptimizerType::kAdam}, 0, model.NumParams());
  model::Workspace ws(model, batch);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  math::FloatBuffer x(static_cast<std::size_t>(batch) * 784);
  for (float& v : x) v = pixel(rng);
  std::vector<float> y(static_cast<std::size_t>(batch));
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i % 10);

  // Each layer alone, on activations of the right size.
  const std::size_t layers = model.NumLayers();
  std::vector<math::FloatBuffer> acts(layers + 1), deltas(layers + 1);
  acts[0] = x;
  deltas[0].resize(x.size());
  std::vector<float> scratch;
  for (std::size_t l = 0; l < layers; ++l) {
    acts[l + 1].resize(static_cast<std::size_t>(batch) * model.layer(l).output().Size());
    deltas[l + 1].resize(acts[l + 1].size());
    scratch.resize(std::max(scratch.size(), model.layer(l).ScratchFloats(batch)));
  }
  const model::LayerPass pass{
      .rows = batch, .training = true, .noise_seed = 1, .scratch = scratch.data()};
  std::vector<std::vector<double>> forward(layers), backward(layers);
  std::vector<double> step, gemm_share;
  for (int r = 0; r < reps; ++r) {
    for (std::size_t l = 0; l < layers; ++l) {
      const Clock::time_point start = Clock::now();
      model.layer(l).Forward(params.data() + model.ParamOffset(l), acts[l].data(),
                             acts[l + 1].data(), pass);
      forward[l].push_back(Since(start));
    }
    for (std::size_t l = layers; l-- > 0;) {
      std::fill(deltas[l + 1].begin(), deltas[l + 1].end(), 0.01f);
      const Clock::time_point start = Clock::now();
      model.layer(l).Backward(params.data() + model.ParamOffset(l), acts[l].data(),
                              acts[l + 1].data(), deltas[l + 1].data(),
                              l == 0 ? nullptr : deltas[l].data(),
                              grad.data() + model.ParamOffset(l), pass);
      backward[l].push_back(Since(start));
    }
    math::TakeGemmSeconds();
    const Clock::time_point start = Clock::now();
    model.ForwardBackward(params.data(), x.data(), y.data(), batch, 0.0f, grad.data(), ws);
    adam->Step(params, grad, 1e-3f);
    step.push_back(Since(start));
    gemm_share.push_back(math::TakeGemmSeconds() / step.back());
  }
  const std::vector<model::LayerSpec> specs = model::ModelLayers(model.spec());
  // The path each convolution and pooling took (chosen at its first pass above).
  for (const std::string& line : model::ChooseLayerPaths(model, batch)) {
    std::printf("%s\n", line.c_str());
  }
  std::printf("CNN step, batch %d, %d BLAS threads, %s, median of %d; OpenBLAS kernels %s\n", batch,
              threads, math::PrecisionName(math::CurrentPrecision()), reps, math::BlasCoreName());
  std::printf("%-10s %-10s %10s %10s\n", "layer", "output", "fwd ms", "bwd ms");
  for (std::size_t l = 0; l < layers; ++l) {
    std::printf("%-10s %-10s %10.3f %10.3f\n", model::LayerTypeName(specs[l]).c_str(),
                model::FormatShape(model.layer(l).output()).c_str(),
                1e3 * bench::Median(forward[l]), 1e3 * bench::Median(backward[l]));
  }
  const double seconds = bench::Median(step);
  std::printf("step %.2f ms\nsamples_per_sec %.0f gemm_share %.2f\n", 1e3 * seconds,
              batch / seconds, bench::Median(gemm_share));
  return 0;
}
