// Model parallelism against data parallelism across two "hosts" (network namespaces, one dtraind
// each, a shared cluster key), when the network is fast and when it is the bottleneck: MLP
// 784-2048-2048-2048-10 (10.5 M parameters) on Fashion-MNIST, a global batch of 256, Adam,
// a fixed number of steps, submitted to h0's daemon:
//   - data parallel: sync ring, 2 replicas of 128 rows, one per host (each step all-reduces the
//     42 MB gradient);
//   - model parallel: 1 replica of 256 rows, its 2 partitions one per host, as a pipeline (layers,
//     8 micro-batches: 2 MiB of activations forward and of gradients back per step) and as tensor
//     partitions (about 6 MB each way per step);
// with no limit and with both hosts' links at 1 Gbit/s and 100 Mbit/s (tc tbf). Prints samples/s
// (256 rows a step over the job's running time, from its events) and each limited figure as a
// share of the unlimited one, measured in one run.
// Needs root. Usage: bench_model_parallel_hosts [--only TEXT] [DTRAIND DTRAIN]  (default: beside
// this binary's build tree); --only runs the layouts whose name contains TEXT.
#include <cstdio>
#include <string>
#include <vector>

#include "bench/netns_jobs.h"

namespace {

constexpr int kHosts = 2;
constexpr int kSteps = 20;
constexpr int kGlobalBatch = 256;

std::string Job(const std::string& cluster, int batch) {
  return dtrain::bench::FashionJob("mp-hosts", dtrain::bench::kWideMlp, kHosts,
                                   "epochs = 0\nsteps = " + std::to_string(kSteps) +
                                       "\nbatch_size = " + std::to_string(batch) +
                                       "\nlog_every = 10\neval_every = 1000000\n",
                                   cluster, false);
}

}  // namespace

int main(int argc, char** argv) {
  if (!dtrain::bench::NetnsOrSayWhy("bench_model_parallel_hosts")) return 2;
  const dtrain::bench::BenchArgs args = dtrain::bench::ParseBenchArgs(argc, argv);
  dtrain::bench::JobCluster cluster(kHosts, args);
  struct Layout {
    std::string name;
    std::string cluster;
    int batch;  // per replica
  };
  const std::vector<Layout> layouts = {
      {"data parallel (sync ring, 2 x 128)", "workers = 2\nmode = \"sync\"\n", kGlobalBatch / 2},
      {"model parallel (layers, M = 8)",
       "model_parallel = 2\npartition = \"layers\"\nmicro_batches = 8\n", kGlobalBatch},
      {"model parallel (tensor)", "model_parallel = 2\npartition = \"tensor\"\n", kGlobalBatch}};
  const std::vector<std::string> limits = {"", "1gbit", "100mbit"};
  std::printf("MLP 784-2048-2048-2048-10, 2 netns hosts, %d steps of %d rows; samples/s (share of "
              "unlimited)\n", kSteps, kGlobalBatch);
  std::printf("%-36s %10s %17s %17s\n", "layout", "no limit", "1 Gbit/s", "100 Mbit/s");
  for (const Layout& layout : layouts) {
    if (layout.name.find(args.only) == std::string::npos) continue;
    std::printf("%-36s", layout.name.c_str());
    double unlimited = 0.0;
    for (const std::string& rate : limits) {
      const double seconds = cluster.RunningSeconds(Job(layout.cluster, layout.batch), rate,
                                                    layout.name);
      dtrain::bench::PrintRate(seconds, static_cast<double>(kSteps) * kGlobalBatch, &unlimited);
    }
    std::printf("\n");
  }
  return 0;
}
