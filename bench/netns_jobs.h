// Jobs submitted to a cluster of dtraind "hosts" (network namespaces, tests/cluster/netns_cluster.h)
// and timed, for the benchmarks that compare layouts across hosts and network speeds.
//
//   const BenchArgs args = ParseBenchArgs(argc, argv);          // [--only TEXT] [DTRAIND DTRAIN]
//   JobCluster c(2, args);                                      // one daemon a host, shared key
//   double s = c.RunningSeconds(job_text, "100mbit", "sync");   // 0: failed (said on stderr)
//   nlohmann::json job = c.RunJob(job_text, "1gbit", "ring");   // its JOB object, with events
//   std::int64_t id = c.Submit(job_text);  nlohmann::json j = c.Status(id);  // without waiting
//   double step = StepSeconds(c, job);                          // from the metric rows
//   auto rows = WorkerRows(c, job, "wire_bytes");               // each worker's, by step
//   double wire = MetricPerStep(rows);                          // their mean per step
//
// Needs root. One thread at a time.
#pragma once

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/cpu_model.h"
#include "bench/fashion_mnist.h"
#include "cluster/netns_cluster.h"

namespace dtrain::bench {

struct BenchArgs {
  std::string only;  // run only what contains it
  std::string dtraind, dtrain;
};

// True where network namespaces can be made here; otherwise says why on stderr, as `program`,
// and the bench should exit 2 ("cannot run here").
inline bool NetnsOrSayWhy(const char* program) {
  std::string why;
  if (dtrain::testing::NetnsAvailable(&why)) return true;
  std::fprintf(stderr, "%s: %s\n", program, why.c_str());
  return false;
}

// [--only TEXT] [DTRAIND DTRAIN]; by default the binaries beside this one's build tree.
inline BenchArgs ParseBenchArgs(int argc, char** argv) {
  const std::filesystem::path build =
      std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path();
  BenchArgs args;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--only" && i + 1 < argc) {
      args.only = argv[++i];
    } else {
      paths.emplace_back(argv[i]);
    }
  }
  args.dtraind = paths.size() == 2 ? paths[0] : (build / "daemon/dtraind").string();
  args.dtrain = paths.size() == 2 ? paths[1] : (build / "cmd/dtrain").string();
  return args;
}

// Seconds from the job's first `running` event to its `succeeded` one; 0 when it did not succeed.
inline double RunningSeconds(const nlohmann::json& job) {
  double start = 0, end = 0;
  for (const nlohmann::json& e : job["events"]) {
    if (e["to"] == "running" && start == 0) start = e["time"].get<double>();
    if (e["to"] == "succeeded") end = e["time"].get<double>();
  }
  return end > start && start > 0 ? end - start : 0.0;
}

// A tbf bucket of about 10 ms at `rate` ("10gbit", "100mbit", "500kbit"), at least 64 KB: a
// smaller bucket than rate / HZ keeps the link below its rate.
inline std::string TbfBurst(const std::string& rate) {
  double bits = std::atof(rate.c_str());
  if (rate.find("gbit") != std::string::npos) bits *= 1e9;
  else if (rate.find("mbit") != std::string::npos) bits *= 1e6;
  else if (rate.find("kbit") != std::string::npos) bits *= 1e3;
  const long kb = static_cast<long>(bits / 8 / 100 / 1000);
  return std::to_string(std::max(64L, kb)) + "kb";
}

class JobCluster {
 public:
  JobCluster(int hosts, const BenchArgs& args) : cluster_(hosts), dtrain_(args.dtrain) {
    const std::string key = cluster_.HostDir(0) + "/cluster.key";
    std::ofstream(key) << "a shared secret for the benchmark cluster, 32+ bytes\n";
    ::chmod(key.c_str(), 0600);
    for (int h = 0; h < hosts; ++h) daemons_.push_back(cluster_.StartPeerDaemon(h, args.dtraind, key));
  }

  // Submits `text` to host 0's daemon with every host's link limited to `rate` (tc tbf; empty:
  // none) and waits for it; its JOB object with events (null when it could not be read).
  nlohmann::json RunJob(const std::string& text, const std::string& rate) {
    using namespace std::chrono_literals;
    const int hosts = static_cast<int>(daemons_.size());
    const std::string path = cluster_.HostDir(0) + "/job.toml";
    std::ofstream(path, std::ios::trunc) << text;
    for (int h = 0; h < hosts; ++h) {
      if (!rate.empty()) cluster_.LimitBandwidth(h, rate, TbfBurst(rate));
    }
    const auto r = Dtrain({"submit", "--json", path}, 1800s);
    for (int h = 0; h < hosts; ++h) {
      if (!rate.empty()) cluster_.RemoveBandwidthLimit(h);
    }
    const std::int64_t id = SubmittedId(r);
    return id < 0 ? nullptr : Status(id);
  }

  // Submits `text` to host 0's daemon and returns at once: the job's id, or -1 (said on stderr).
  std::int64_t Submit(const std::string& text) {
    using namespace std::chrono_literals;
    const std::string path = cluster_.HostDir(0) + "/job.toml";
    std::ofstream(path, std::ios::trunc) << text;
    return SubmittedId(Dtrain({"submit", "--no-wait", "--json", path}, 60s));
  }

  // Job `id`'s JOB object with its events (null when it could not be read).
  nlohmann::json Status(std::int64_t id) {
    using namespace std::chrono_literals;
    const auto status = Dtrain({"status", std::to_string(id), "--json"}, 60s);
    return nlohmann::json::parse(status.out, nullptr, false);
  }

  // RunJob, then the seconds it ran, or 0 (its status on stderr, under `label`).
  double RunningSeconds(const std::string& text, const std::string& rate, const std::string& label) {
    const nlohmann::json job = RunJob(text, rate);
    const double seconds = job.is_object() ? bench::RunningSeconds(job) : 0.0;
    if (seconds <= 0.0) {
      std::fprintf(stderr, "%s: %s\n", label.c_str(), job.dump().c_str());
    }
    return seconds;
  }

  // `dtrain ARGS...` against host 0's daemon, run in host 0.
  testing::ProcessResult Dtrain(std::vector<std::string> args, std::chrono::milliseconds timeout) {
    args.insert(args.begin(), {dtrain_, "--socket", daemons_[0].socket});
    return cluster_.Run(0, args, timeout);
  }

  const testing::NetnsCluster& netns() const { return cluster_; }

 private:
  // The id `dtrain submit --json` printed, or -1 (its output on stderr).
  static std::int64_t SubmittedId(const testing::ProcessResult& r) {
    const nlohmann::json submitted = nlohmann::json::parse(r.out, nullptr, false);
    if (submitted.is_object() && submitted.contains("id")) {
      return submitted["id"].get<std::int64_t>();
    }
    std::fprintf(stderr, "%s\n%s\n", r.err.c_str(), r.out.c_str());
    return -1;
  }

  testing::NetnsCluster cluster_;
  std::string dtrain_;
  std::vector<testing::NetnsDaemon> daemons_;
};

// `hosts = ["h0", ..., "h<n-1>"]`: every host of a JobCluster of n.
inline std::string HostsKey(int hosts) {
  std::string list;
  for (int h = 0; h < hosts; ++h) list += (h ? ", \"h" : "\"h") + std::to_string(h) + "\"";
  return "hosts = [" + list + "]\n";
}

// The [optimizer] keys of FashionJob unless a bench names others.
inline constexpr const char* kWideMlpAdam = "type = \"adam\"\nlr = 0.0005\n";

// The MLP 784-2048-2048-2048-10 (10.5 M parameters, a 42 MB gradient): a FashionJob's model.
inline constexpr const char* kWideMlp = "[model]\ntype = \"mlp\"\nhidden = [2048, 2048, 2048]\n";

// examples/fashion-mnist-cnn.toml's network with its dense layer widened to 1024 (conv 5x5x32
// same, max-pool 2, conv 5x5x64 same, max-pool 2, dense 1024, dropout 0.3, dense 10: 3.27 M
// parameters, a 13 MB gradient, most of it the dense layer's): a FashionJob's model.
inline constexpr const char* kWideCnn =
    "[model]\ntype = \"sequential\"\ninput_shape = [1, 28, 28]\n"
    "[[model.layers]]\ntype = \"conv2d\"\nfilters = 32\nkernel = 5\npadding = \"same\"\n"
    "activation = \"relu\"\n"
    "[[model.layers]]\ntype = \"maxpool2d\"\nsize = 2\n"
    "[[model.layers]]\ntype = \"conv2d\"\nfilters = 64\nkernel = 5\npadding = \"same\"\n"
    "activation = \"relu\"\n"
    "[[model.layers]]\ntype = \"maxpool2d\"\nsize = 2\n"
    "[[model.layers]]\ntype = \"dense\"\nunits = 1024\nactivation = \"relu\"\n"
    "[[model.layers]]\ntype = \"dropout\"\nrate = 0.3\n"
    "[[model.layers]]\ntype = \"dense\"\nunits = 10\n";

// A job training `model` (its [model] tables: kWideMlp, kWideCnn) on Fashion-MNIST with
// `optimizer` (its [optimizer] keys; Adam, lr 0.0005, by default) and one BLAS thread a process,
// across every host of a JobCluster of `hosts`: `train` holds its [train] keys beyond threads
// (steps or epochs, batch_size, log_every, ...), `cluster` its [cluster] keys beyond hosts and
// timeout_seconds; with `test`, the job evaluates on the test set.
inline std::string FashionJob(const std::string& name, const std::string& model, int hosts,
                              const std::string& train, const std::string& cluster, bool test,
                              const std::string& optimizer = kWideMlpAdam) {
  const std::string dir = std::string(kFashionDir) + "/";
  std::string data = "[data]\nformat = \"idx\"\ntrain = \"" + dir +
                     "train-images-idx3-ubyte.gz\"\ntrain_labels = \"" + dir +
                     "train-labels-idx1-ubyte.gz\"\nscale = 255.0\n";
  if (test) {
    data += "test = \"" + dir + "t10k-images-idx3-ubyte.gz\"\ntest_labels = \"" + dir +
            "t10k-labels-idx1-ubyte.gz\"\n";
  }
  // The [[model.layers]] tables come last in [model], before [train] opens.
  return "name = \"" + name + "\"\n" + data + model + "[train]\nthreads = 1\n" + train +
         "[optimizer]\n" + optimizer + "[cluster]\n" + HostsKey(hosts) + "timeout_seconds = 600\n" +
         cluster;
}

// One metric row of a worker.
struct MetricSample {
  std::int64_t step = 0;
  double time = 0.0;  // seconds since the epoch
  double value = 0.0;
};

// Every row of metric `name` that `job` (a JOB object that succeeded) recorded, per worker in
// the order of steps; empty when there are none or the job did not succeed.
inline std::map<int, std::vector<MetricSample>> WorkerRows(JobCluster& cluster,
                                                          const nlohmann::json& job,
                                                          const std::string& name) {
  using namespace std::chrono_literals;
  std::map<int, std::vector<MetricSample>> by_worker;
  if (!job.is_object() || job.value("state", "") != "succeeded") return by_worker;
  const auto r = cluster.Dtrain(
      {"metrics", std::to_string(job["id"].get<int>()), "--format", "json", "--name", name}, 60s);
  const nlohmann::json rows = nlohmann::json::parse(r.out, nullptr, false);
  if (!rows.is_array()) return by_worker;
  for (const nlohmann::json& row : rows) {
    if (row.value("name", "") != name || !row["value"].is_number()) continue;
    by_worker[row.value("worker", -1)].push_back(
        {row["step"].get<std::int64_t>(), row["time"].get<double>(), row["value"].get<double>()});
  }
  for (auto& [worker, points] : by_worker) {
    std::sort(points.begin(), points.end(),
              [](const MetricSample& a, const MetricSample& b) { return a.step < b.step; });
  }
  return by_worker;
}

// The mean over the workers of a metric's value per step (rows of WorkerRows), from the logging
// windows after the first (each row covers the steps since the row before); 0 where no worker
// has two rows.
inline double MetricPerStep(const std::map<int, std::vector<MetricSample>>& rows) {
  double sum = 0.0;
  int counted = 0;
  for (const auto& [worker, points] : rows) {
    if (points.size() < 2 || points.back().step <= points.front().step) continue;
    double total = 0.0;
    for (std::size_t i = 1; i < points.size(); ++i) total += points[i].value;
    sum += total / static_cast<double>(points.back().step - points.front().step);
    ++counted;
  }
  return counted > 0 ? sum / counted : 0.0;
}

// Seconds per step of `job` (a JOB object), each replica's from its train_loss rows between its
// second row and its last (start-up and the first steps left out), averaged over the replicas
// (async replicas each go at their own pace); 0 when there are too few rows.
inline double StepSeconds(JobCluster& cluster, const nlohmann::json& job) {
  double sum = 0.0;
  int counted = 0;
  for (const auto& [worker, points] : WorkerRows(cluster, job, "train_loss")) {
    if (points.size() < 3 || points.back().step <= points[1].step) continue;
    sum += (points.back().time - points[1].time) /
           static_cast<double>(points.back().step - points[1].step);
    ++counted;
  }
  return counted > 0 ? sum / counted : 0.0;
}

// One table cell of `samples` over `seconds`: the first (`*unlimited` still 0) as samples/s in 10
// columns, the others with their share of the first in 17; "failed" where seconds is 0.
inline void PrintRate(double seconds, double samples, double* unlimited) {
  const bool first = *unlimited <= 0.0;
  if (seconds <= 0.0) {
    std::printf(first ? " %10s" : " %17s", "failed");
  } else if (first) {
    *unlimited = samples / seconds;
    std::printf(" %10.0f", *unlimited);
  } else {
    std::printf(" %10.0f (%4.2f)", samples / seconds, samples / seconds / *unlimited);
  }
  std::fflush(stdout);
}

}  // namespace dtrain::bench
