// Each distributed mode across three "hosts" (network namespaces, one dtraind each, a shared
// cluster key) when the network is fast and when it is the bottleneck: Fashion-MNIST MLP
// 784-256-128-10, 3 replicas (one per host; async and ps add one shard on h0, or three shards, one
// per host: process r runs on hosts[r % 3]), a fixed number of steps,
// submitted to h0's daemon, with no limit and with every host's link at 100 and 20 Mbit/s (tc
// tbf). Prints samples/s (all replicas' rows over the job's running time, from its events) and
// each limited figure as a share of the unlimited one, measured in one run.
// Needs root. Usage: bench_cluster_modes [--only TEXT] [DTRAIND DTRAIN]   (default: beside this
// binary's build tree: ../daemon/dtraind, ../cmd/dtrain); --only runs the modes whose name
// contains TEXT.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench/netns_jobs.h"

namespace {

constexpr int kHosts = 3;
constexpr int kSteps = 300;
constexpr int kBatch = 64;  // per replica

std::string Job(const std::string& cluster) {
  const std::string data = "/usr/share/datasets/fashion-mnist/";
  return "name = \"modes\"\n[data]\nformat = \"idx\"\ntrain = \"" + data +
         "train-images-idx3-ubyte.gz\"\ntrain_labels = \"" + data +
         "train-labels-idx1-ubyte.gz\"\nscale = 255.0\n[model]\ntype = \"mlp\"\n"
         "hidden = [256, 128]\n[train]\nepochs = 0\nsteps = " +
         std::to_string(kSteps) + "\nbatch_size = " + std::to_string(kBatch) +
         "\nthreads = 1\nlog_every = 100\n[optimizer]\ntype = \"adam\"\nlr = 0.001\n[cluster]\n"
         "workers = 3\nhosts = [\"h0\", \"h1\", \"h2\"]\ntimeout_seconds = 300\n" + cluster;
}

}  // namespace

int main(int argc, char** argv) {
  if (!dtrain::bench::NetnsOrSayWhy("bench_cluster_modes")) return 2;
  const dtrain::bench::BenchArgs args = dtrain::bench::ParseBenchArgs(argc, argv);
  dtrain::bench::JobCluster cluster(kHosts, args);
  const std::vector<std::pair<std::string, std::string>> modes = {
      {"sync ring", "mode = \"sync\"\n"},
      {"sync ps", "mode = \"sync\"\nallreduce = \"ps\"\nservers = 1\n"},
      {"async", "mode = \"async\"\nservers = 1\n"},
      {"sync ps, 3 shards", "mode = \"sync\"\nallreduce = \"ps\"\nservers = 3\n"},
      {"async, 3 shards", "mode = \"async\"\nservers = 3\n"}};
  const std::vector<std::string> limits = {"", "100mbit", "20mbit"};
  std::printf("Fashion-MNIST MLP 784-256-128-10, 3 replicas on 3 netns hosts, %d steps x %d rows "
              "each; samples/s (share of unlimited)\n", kSteps, kBatch);
  std::printf("%-18s %10s %17s %17s\n", "mode", "no limit", "100 Mbit/s", "20 Mbit/s");
  for (const auto& [name, cluster_keys] : modes) {
    if (name.find(args.only) == std::string::npos) continue;
    std::printf("%-18s", name.c_str());
    double unlimited = 0.0;
    for (const std::string& rate : limits) {
      const double seconds = cluster.RunningSeconds(Job(cluster_keys), rate, name);
      dtrain::bench::PrintRate(seconds, 3.0 * kSteps * kBatch, &unlimited);
    }
    std::printf("\n");
  }
  return 0;
}
