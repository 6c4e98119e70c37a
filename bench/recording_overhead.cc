// The cost of recording a run: training throughput of the Fashion-MNIST MLP (784-256-128-10,
// batch 128, one thread) with every step's metrics sent to the SQLite store and a checkpoint
// every 500 steps (the job runner's TrainRecorded), beside the same training with recording off
// (a bare Trainer::Run whose metrics go nowhere). Rounds alternate between the two, in one run.
// Prints the throughput ratio on/off (target >= 0.95).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "bench/fashion_mnist.h"
#include "bench/median.h"
#include "core/math/gemm.h"
#include "core/model/model.h"
#include "core/optim/optimizer.h"
#include "core/train/trainer.h"
#include "daemon/runner/recorded_training.h"
#include "daemon/store/store.h"

namespace {

using namespace dtrain;
using Clock = std::chrono::steady_clock;

using dtrain::bench::Median;

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const std::int64_t steps = argc > 2 ? std::atoll(argv[2]) : 1000;
  math::SetBlasThreads(1);
  const data::Dataset set = bench::LoadFashionTrain();
  const data::Scaling scaling = data::ConstantScaling(255.0f);

  const model::Model model(bench::FashionMlp({256, 128}));
  optim::OptimizerOptions adam;
  adam.type = optim::OptimizerType::kAdam;
  train::TrainOptions options;
  options.epochs = 0;
  options.steps = steps;
  options.batch_size = 128;
  options.log_every = 1;  // metrics every step
  options.schedule.lr = 0.001f;
  config::CheckpointConfig policy;
  policy.every_steps = argc > 3 ? std::atoll(argv[3]) : 500;
  policy.keep = 3;

  const auto dir = std::filesystem::temp_directory_path() / "dtrain-bench-recording";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto opened = store::Store::Open((dir / "bench.db").string());
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.status().message().c_str());
    return 1;
  }
  std::unique_ptr<store::Store> store = std::move(opened).value();

  std::vector<double> on_rate, off_rate;
  std::int64_t metric_rows = 0, checkpoints = 0;
  for (int round = 0; round < rounds; ++round) {
    for (bool recording : {true, false}) {
      train::LocalStrategy strategy(optim::MakeOptimizer(adam, 0, model.NumParams()), 0.0f);
      train::Trainer trainer(model, options, set, nullptr, scaling, strategy);
      trainer.InitParams();
      store::JobRecord job;
      job.name = "bench";
      const std::int64_t id = recording ? store->CreateJob(job).value() : 0;
      const auto start = Clock::now();
      if (recording) {
        runner::StoreRecorder recorder(*store, id, 0, policy.keep);
        auto why = runner::TrainRecorded(trainer, policy, recorder, {}, -1);
        if (!why.ok() || !store->Flush().ok()) {
          std::fprintf(stderr, "recording failed\n");
          return 1;
        }
      } else {
        train::NullListener none;
        if (!trainer.Run(none).ok()) return 1;
      }
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      (recording ? on_rate : off_rate).push_back(static_cast<double>(steps * 128) / seconds);
      if (recording) {
        metric_rows += static_cast<std::int64_t>(store->Metrics(id, "").value().size());
        checkpoints += static_cast<std::int64_t>(store->Checkpoints(id).value().size());
      }
    }
  }
  std::filesystem::remove_all(dir);

  const double on = Median(on_rate), off = Median(off_rate);
  std::printf("MLP 784-256-128-10 on Fashion-MNIST, batch 128, 1 thread, %d rounds x %lld steps\n",
              rounds, static_cast<long long>(steps));
  std::printf("  recording on  (metrics every step, checkpoint every %lld)  %9.0f samples/s\n",
              static_cast<long long>(policy.every_steps), on);
  std::printf("  recording off                                            %9.0f samples/s\n", off);
  std::printf("  recorded: %lld metric rows, %lld checkpoints kept\n",
              static_cast<long long>(metric_rows), static_cast<long long>(checkpoints));
  std::printf("  on/off throughput ratio  %.3f   (target >= 0.95)\n", on / off);
  return 0;
}
