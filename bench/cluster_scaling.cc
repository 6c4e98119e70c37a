// How each distributed mode scales past 3 hosts when the network is what limits it: 8 and 16
// "hosts" (network namespaces, one dtraind and one job process each, a shared key), every host's
// link limited by tc tbf to 10 Gbit/s, 1 Gbit/s or 100 Mbit/s, and a step with little compute
// (synthetic rows, 32 per replica) on an MLP 784-256-128-10 whose gradient is S = 0.94 MB.
// For each mode: the time per step (rank 0's metric rows between the second and the last log,
// so start-up is left out) and the bytes each host sent per step (eth0's counters over the job,
// divided by its steps), the median host and the busiest one, beside what the algorithm sends:
//   ring (sync ring, and local every average_every steps): 2 (n-1)/n S from every host;
//   ps with k shards (sync ps, async): a replica's host S (its push), a shard's host its pulls
//   to the n-1 remote replicas, (n-1) S/k, plus its own replica's push to the other shards;
//   model parallel (K = 2 layers, a ring per partition of m = n/2 replicas): the first layer's
//   partition is the larger, S_1 = 0.80 MB, so 2 (m-1)/m S_1, plus a batch of activations (or
//   of their gradients) across the cut;
//   sync ring compressed (powersgd rank 4, topk 0.001, bf16), with P the floats one replica
//   contributes a step by the job's compression plan (compress::PlanCompression): topk and bf16
//   all-gather them, (n-1) 4P; powersgd all-reduces them in two means, each 2 (n-1)/n of its
//   bytes, or (n-1) of them where that is at most 96 KiB (the ring's gather of small ranges,
//   RingAllReduce::GathersToSum), or at 3 and 4 ranks ScatterChunksSent(n)/n of them where that
//   is at most 112 KiB (chunks both ways, RingAllReduce::ScattersToSum);
//   eth0's counters add, over the job, the final checkpoint's gather of every replica's
//   residual (n-1 gradients from each host), which wire_bytes leaves out;
//   sync ring with bucket_bytes = 0 (no overlap: the whole gradient after the backward pass) and
//   64 KiB (two buckets: the last two layers, then the first), beside the default 4 MiB (for
//   this MLP one bucket, so the same exchange after the pass).
// With them, each worker's metrics per step, the mean over the workers: wire_bytes (compressed
// jobs), compression_seconds, comm_seconds and exposed_comm_seconds (0 where a mode has none).
// Every row also goes to --csv FILE, which bench/scaling-sim/simulate.py reads.
// Needs root. Usage: bench_cluster_scaling [--hosts 8,16] [--rates 10gbit,1gbit,100mbit]
//   [--steps N] [--only TEXT] [--csv FILE] [DTRAIND DTRAIN]; --only runs the modes whose name
//   contains TEXT ("sync ring": the ring and its compressed and bucket variants).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench/fashion_mnist.h"
#include "bench/netns_jobs.h"
#include "config/job.h"
#include "core/compress/compression_plan.h"
#include "core/dist/ring_allreduce.h"
#include "core/model/model.h"

namespace {

using dtrain::compress::Method;
using json = nlohmann::json;

constexpr double kGradientBytes = 4.0 * 235146;  // MLP 784-256-128-10
constexpr double kFirstLayerBytes = 4.0 * (784 * 256 + 256);
constexpr int kBatch = 32;
constexpr double kCutBytes = 4.0 * kBatch * 256;  // the first layer's output, per step

struct Mode {
  std::string name;
  std::string keys;  // [cluster] beyond workers and hosts
  int shards = 0;    // parameter-server shards
  int average_every = 1;
  int partitions = 1;
  dtrain::compress::Settings compression{};  // sync ring only
  std::uint64_t bucket_bytes = dtrain::config::ClusterConfig::kDefaultBucketBytes;  // sync ring
};

// A sync ring mode with `compression` and `bucket_bytes`.
Mode Ring(std::string name, const dtrain::compress::Settings& compression,
          std::uint64_t bucket_bytes = dtrain::config::ClusterConfig::kDefaultBucketBytes) {
  Mode mode{std::move(name), "mode = \"sync\"\n"};
  mode.compression = compression;
  mode.bucket_bytes = bucket_bytes;
  return mode;
}

std::string ClusterKeys(const Mode& mode) {
  std::string keys = mode.keys;
  if (mode.bucket_bytes != dtrain::config::ClusterConfig::kDefaultBucketBytes) {
    keys += "bucket_bytes = " + std::to_string(mode.bucket_bytes) + "\n";
  }
  if (mode.compression.method == Method::kNone) return keys;
  keys += "compression = \"" + std::string(MethodName(mode.compression.method)) + "\"\n";
  if (mode.compression.method == Method::kPowerSgd) {
    keys += "compression_rank = " + std::to_string(mode.compression.rank) + "\n";
  } else if (mode.compression.method == Method::kTopK) {
    keys += "compression_fraction = " + std::to_string(mode.compression.fraction) + "\n";
  }
  return keys;
}

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string Job(const Mode& mode, int hosts, int steps) {
  const int replicas = hosts / mode.partitions;
  return "name = \"scaling\"\n[data]\nformat = \"synthetic\"\nrows = 4096\ntest_rows = 64\n"
         "features = 784\nclasses = 10\n[model]\ntype = \"mlp\"\nhidden = [256, 128]\n[train]\n"
         "epochs = 0\nsteps = " + std::to_string(steps) + "\nbatch_size = " +
         std::to_string(kBatch) + "\nthreads = 1\nlog_every = " + std::to_string(steps / 5) +
         "\n[optimizer]\ntype = \"sgd\"\nlr = 0.01\n[cluster]\nworkers = " +
         std::to_string(replicas) + "\n" + dtrain::bench::HostsKey(hosts) +
         "timeout_seconds = 600\nheartbeat_timeout = 60\n" + ClusterKeys(mode);
}

// Bytes each host's eth0 has sent so far.
std::vector<double> SentBytes(const dtrain::testing::NetnsCluster& cluster) {
  std::vector<double> sent;
  for (int h = 0; h < cluster.hosts(); ++h) {
    const auto r = cluster.Run(h, {"ip", "-j", "-s", "link", "show", "eth0"});
    const json links = json::parse(r.out, nullptr, false);
    sent.push_back(links.is_array() && !links.empty()
                       ? links[0]["stats64"]["tx"]["bytes"].get<double>()
                       : 0.0);
  }
  return sent;
}

// What a replica of a compressed sync ring sends per step, from the MLP's compression plan:
// powersgd's two means (P and the raw tensors, then Q) as the ring all-reduces them, a small mean
// among more than two replicas (RingAllReduce::GathersToSum) as a gather of every replica's
// range, (n-1) b, a middle one (ScattersToSum) as chunks both ways, ScatterChunksSent(n) b/n,
// a larger one 2 (n-1)/n b; topk and bf16 gather every replica's
// message, (n-1) times what one replica contributes.
double CompressedBytes(const dtrain::compress::Settings& settings, double replicas) {
  const dtrain::model::Model mlp(dtrain::bench::FashionMlp({256, 128}));
  const std::vector<dtrain::compress::TensorPlan> plan = PlanCompression(mlp.Tensors(), settings);
  if (settings.method != Method::kPowerSgd) return (replicas - 1) * 4.0 * PlanSentFloats(plan);
  double first = 0.0, second = 0.0;  // the two means' floats
  for (const dtrain::compress::TensorPlan& t : plan) {
    const bool low_rank = t.encoding == dtrain::compress::Encoding::kLowRank;
    first += low_rank ? static_cast<double>(t.tensor.rows * t.rank) : t.sent_floats;
    if (low_rank) second += static_cast<double>(t.tensor.cols * t.rank);
  }
  const auto mean = [replicas](double floats) {
    using dtrain::dist::RingAllReduce;
    const double bytes = 4.0 * floats;
    const int n = static_cast<int>(replicas);
    const auto size = static_cast<std::size_t>(bytes);
    if (RingAllReduce::GathersToSum(n, size, dtrain::dist::RingOptions{})) {
      return (replicas - 1) * bytes;
    }
    if (RingAllReduce::ScattersToSum(n, size, dtrain::dist::RingOptions{})) {
      return static_cast<double>(RingAllReduce::ScatterChunksSent(n)) * bytes / replicas;
    }
    return 2.0 * (replicas - 1) / replicas * bytes;
  };
  return mean(first) + mean(second);
}

// What the algorithm sends per step from a replica's host and from the busiest host.
std::pair<double, double> FormulaBytes(const Mode& m, int hosts) {
  const double s = kGradientBytes;
  if (m.shards > 0) {
    const double n = hosts, k = m.shards;
    return {s, (n - 1) * s / k + s * (k - 1) / k};
  }
  const double replicas = static_cast<double>(hosts) / m.partitions;
  if (m.partitions > 1) {
    const double ring = 2.0 * (replicas - 1) / replicas * kFirstLayerBytes + kCutBytes;
    return {ring, ring};
  }
  if (m.compression.method != Method::kNone) {
    const double bytes = CompressedBytes(m.compression, replicas);
    return {bytes, bytes};
  }
  const double ring = 2.0 * (replicas - 1) / replicas * s / m.average_every;
  return {ring, ring};
}

// A sync ring job's exchange, per step: the mean over its workers of each metric.
struct Exchange {
  double wire_bytes = 0.0, compression_seconds = 0.0, comm_seconds = 0.0, exposed_seconds = 0.0;
};

Exchange ExchangeMetrics(dtrain::bench::JobCluster& cluster, const json& job) {
  using dtrain::bench::MetricPerStep;
  using dtrain::bench::WorkerRows;
  return {MetricPerStep(WorkerRows(cluster, job, "wire_bytes")),
          MetricPerStep(WorkerRows(cluster, job, "compression_seconds")),
          MetricPerStep(WorkerRows(cluster, job, "comm_seconds")),
          MetricPerStep(WorkerRows(cluster, job, "exposed_comm_seconds"))};
}

}  // namespace

int main(int argc, char** argv) {
  if (!dtrain::bench::NetnsOrSayWhy("bench_cluster_scaling")) return 2;
  std::vector<int> host_counts = {8, 16};
  std::vector<std::string> rates = {"10gbit", "1gbit", "100mbit"};
  int steps = 100;
  std::string csv_path;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--hosts" && i + 1 < argc) {
      host_counts.clear();
      for (const std::string& h : Split(argv[++i])) host_counts.push_back(std::atoi(h.c_str()));
    } else if (a == "--rates" && i + 1 < argc) {
      rates = Split(argv[++i]);
    } else if (a == "--steps" && i + 1 < argc) {
      steps = std::max(10, std::atoi(argv[++i]));
    } else if (a == "--csv" && i + 1 < argc) {
      csv_path = argv[++i];
    } else {
      rest.push_back(argv[i]);
    }
  }
  const dtrain::bench::BenchArgs args =
      dtrain::bench::ParseBenchArgs(static_cast<int>(rest.size()), rest.data());
  const std::vector<Mode> modes = {
      {"sync ring", "mode = \"sync\"\n"},
      {"sync ps, 1 shard", "mode = \"sync\"\nallreduce = \"ps\"\nservers = 1\n", 1},
      {"sync ps, 2 shards", "mode = \"sync\"\nallreduce = \"ps\"\nservers = 2\n", 2},
      {"sync ps, 4 shards", "mode = \"sync\"\nallreduce = \"ps\"\nservers = 4\n", 4},
      {"async, 4 shards", "mode = \"async\"\nservers = 4\n", 4},
      {"local, every 8", "mode = \"local\"\naverage_every = 8\n", 0, 8},
      {"model parallel 2, ring", "mode = \"sync\"\nmodel_parallel = 2\n", 0, 1, 2},
      Ring("sync ring, no overlap", {}, 0),
      Ring("sync ring, 64 KiB buckets", {}, 64 << 10),
      Ring("sync ring, powersgd 4", {.method = Method::kPowerSgd, .rank = 4}),
      Ring("sync ring, topk 0.001", {.method = Method::kTopK, .fraction = 0.001}),
      Ring("sync ring, bf16", {.method = Method::kBf16})};
  std::ofstream csv;
  if (!csv_path.empty()) {
    csv.open(csv_path, std::ios::app);
    csv << "hosts,rate,mode,shards,average_every,partitions,ms_per_step,median_host_bytes,"
           "busiest_host_bytes,formula_replica_bytes,formula_busiest_bytes,compression,"
           "bucket_bytes,wire_bytes,compression_seconds,comm_seconds,exposed_comm_seconds\n";
  }
  std::printf(
      "%s\nMLP 784-256-128-10 (S = %.2f MB), %d synthetic rows per replica and step, one "
      "process per host, %d steps; bytes sent per host and step in MB; per worker and "
      "step: wire MB, compression, comm and exposed comm ms\n",
      dtrain::bench::CpuModel().c_str(), kGradientBytes / 1e6, kBatch, steps);
  std::printf("%5s %8s %-26s %9s %8s %8s %8s %8s %8s %8s %8s %8s\n", "hosts", "rate", "mode",
              "ms/step", "median", "formula", "busiest", "formula", "wire", "compress", "comm",
              "exposed");
  for (const int hosts : host_counts) {
    dtrain::bench::JobCluster cluster(hosts, args);
    for (const Mode& mode : modes) {
      if (mode.name.find(args.only) == std::string::npos) continue;
      for (const std::string& rate : rates) {
        const std::vector<double> before = SentBytes(cluster.netns());
        const json job = cluster.RunJob(Job(mode, hosts, steps), rate);
        const std::vector<double> after = SentBytes(cluster.netns());
        const double seconds = dtrain::bench::StepSeconds(cluster, job);
        if (seconds <= 0.0) std::fprintf(stderr, "%s: %s\n", mode.name.c_str(), job.dump().c_str());
        std::vector<double> per_step;
        for (std::size_t h = 0; h < after.size(); ++h) per_step.push_back((after[h] - before[h]) / steps);
        std::sort(per_step.begin(), per_step.end());
        const double median = per_step[per_step.size() / 2], busiest = per_step.back();
        const auto [formula_replica, formula_busiest] = FormulaBytes(mode, hosts);
        const Exchange ex = ExchangeMetrics(cluster, job);
        std::printf("%5d %8s %-26s %9.2f %8.3f %8.3f %8.3f %8.3f %8.3f %8.2f %8.2f %8.2f\n", hosts,
                    rate.c_str(), mode.name.c_str(), seconds * 1e3, median / 1e6,
                    formula_replica / 1e6, busiest / 1e6, formula_busiest / 1e6,
                    ex.wire_bytes / 1e6, ex.compression_seconds * 1e3, ex.comm_seconds * 1e3,
                    ex.exposed_seconds * 1e3);
        std::fflush(stdout);
        if (csv.is_open()) {
          csv << hosts << ',' << rate << ",\"" << mode.name << "\"," << mode.shards << ','
              << mode.average_every << ',' << mode.partitions << ',' << seconds * 1e3 << ','
              << median << ',' << busiest << ',' << formula_replica << ',' << formula_busiest << ','
              << MethodName(mode.compression.method) << ',' << mode.bucket_bytes << ','
              << ex.wire_bytes << ',' << ex.compression_seconds << ',' << ex.comm_seconds << ','
              << ex.exposed_seconds << '\n';
          csv.flush();
        }
      }
    }
  }
  return 0;
}
