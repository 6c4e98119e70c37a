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
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cluster/netns_cluster.h"

namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using dtrain::testing::NetnsCluster;
using dtrain::testing::NetnsDaemon;

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

// Seconds the job spent running, from its events (starting -> the end).
double RunningSeconds(const json& job) {
  double start = 0, end = 0;
  for (const json& e : job["events"]) {
    if (e["to"] == "running" && start == 0) start = e["time"].get<double>();
    if (e["to"] == "succeeded") end = e["time"].get<double>();
  }
  return end > start && start > 0 ? end - start : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  if (!dtrain::testing::NetnsAvailable(&why)) {
    std::fprintf(stderr, "bench_cluster_modes: %s\n", why.c_str());
    return 2;
  }
  const std::filesystem::path build =
      std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path();
  std::string only;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else {
      paths.emplace_back(argv[i]);
    }
  }
  const std::string dtraind = paths.size() == 2 ? paths[0] : (build / "daemon/dtraind").string();
  const std::string dtrain = paths.size() == 2 ? paths[1] : (build / "cmd/dtrain").string();

  NetnsCluster cluster(kHosts);
  const std::string key = cluster.HostDir(0) + "/cluster.key";
  std::ofstream(key) << "a shared secret for the benchmark cluster, 32+ bytes\n";
  ::chmod(key.c_str(), 0600);
  std::vector<NetnsDaemon> daemons;
  for (int h = 0; h < kHosts; ++h) daemons.push_back(cluster.StartPeerDaemon(h, dtraind, key));

  const std::vector<std::pair<std::string, std::string>> modes = {
      {"sync ring", "mode = \"sync\"\n"},
      {"sync ps", "mode = \"sync\"\nallreduce = \"ps\"\nservers = 1\n"},
      {"async", "mode = \"async\"\nservers = 1\n"},
      {"sync ps, 3 shards", "mode = \"sync\"\nallreduce = \"ps\"\nservers = 3\n"},
      {"async, 3 shards", "mode = \"async\"\nservers = 3\n"}};
  const std::vector<std::string> limits = {"", "100mbit", "20mbit"};
  std::printf("Fashion-MNIST MLP 784-256-128-10, 3 replicas on 3 netns hosts, %d steps x %d rows "
              "each; samples/s (share of unlimited)\n", kSteps, kBatch);
  std::printf("%-18s %12s %20s %20s\n", "mode", "no limit", "100 Mbit/s", "20 Mbit/s");
  for (const auto& [name, cluster_keys] : modes) {
    if (name.find(only) == std::string::npos) continue;
    const std::string text = Job(cluster_keys);
    const std::string path = cluster.HostDir(0) + "/job.toml";
    std::printf("%-18s", name.c_str());
    double unlimited = 0.0;
    for (const std::string& rate : limits) {
      for (int h = 0; h < kHosts; ++h) {
        if (!rate.empty()) cluster.LimitBandwidth(h, rate);
      }
      std::ofstream(path, std::ios::trunc) << text;
      const auto r = cluster.Run(0, {dtrain, "--socket", daemons[0].socket, "submit", "--json", path},
                                 1200s);
      for (int h = 0; h < kHosts; ++h) {
        if (!rate.empty()) cluster.RemoveBandwidthLimit(h);
      }
      const json submitted = json::parse(r.out, nullptr, false);
      json job;  // with its events, which submit's summary leaves out
      if (submitted.is_object() && submitted.contains("id")) {
        const auto status = cluster.Run(0, {dtrain, "--socket", daemons[0].socket, "status",
                                            std::to_string(submitted["id"].get<int>()), "--json"});
        job = json::parse(status.out, nullptr, false);
      }
      const double seconds = job.is_object() ? RunningSeconds(job) : 0.0;
      if (seconds <= 0.0) {
        std::printf(" %20s", "failed");
        std::fprintf(stderr, "%s: %s\n%s\n", name.c_str(), r.err.c_str(),
                     job.is_object() ? job.dump().c_str() : r.out.c_str());
        continue;
      }
      const double rate_samples = 3.0 * kSteps * kBatch / seconds;
      if (rate.empty()) {
        unlimited = rate_samples;
        std::printf(" %12.0f", rate_samples);
      } else {
        std::printf(" %12.0f (%4.2f)", rate_samples, rate_samples / unlimited);
      }
      std::fflush(stdout);
    }
    std::printf("\n");
  }
  return 0;
}
