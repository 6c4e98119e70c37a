// Jobs submitted to a cluster of dtraind "hosts" (network namespaces, tests/cluster/netns_cluster.h)
// and timed, for the benchmarks that compare layouts across hosts and network speeds.
//
//   const BenchArgs args = ParseBenchArgs(argc, argv);          // [--only TEXT] [DTRAIND DTRAIN]
//   JobCluster c(2, args);                                      // one daemon a host, shared key
//   double s = c.RunningSeconds(job_text, "100mbit", "sync");   // 0: failed (said on stderr)
//
// Needs root. One thread at a time.
#pragma once

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cluster/netns_cluster.h"

namespace dtrain::bench {

struct BenchArgs {
  std::string only;  // run only what contains it
  std::string dtraind, dtrain;
};

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

class JobCluster {
 public:
  JobCluster(int hosts, const BenchArgs& args) : cluster_(hosts), dtrain_(args.dtrain) {
    const std::string key = cluster_.HostDir(0) + "/cluster.key";
    std::ofstream(key) << "a shared secret for the benchmark cluster, 32+ bytes\n";
    ::chmod(key.c_str(), 0600);
    for (int h = 0; h < hosts; ++h) daemons_.push_back(cluster_.StartPeerDaemon(h, args.dtraind, key));
  }

  // Submits `text` to host 0's daemon with every host's link limited to `rate` (tc tbf; empty:
  // none) and waits for it; the seconds it ran, or 0 (its status on stderr, under `label`).
  double RunningSeconds(const std::string& text, const std::string& rate, const std::string& label) {
    using namespace std::chrono_literals;
    const int hosts = static_cast<int>(daemons_.size());
    const std::string path = cluster_.HostDir(0) + "/job.toml";
    std::ofstream(path, std::ios::trunc) << text;
    for (int h = 0; h < hosts; ++h) {
      if (!rate.empty()) cluster_.LimitBandwidth(h, rate);
    }
    const auto r =
        cluster_.Run(0, {dtrain_, "--socket", daemons_[0].socket, "submit", "--json", path}, 1800s);
    for (int h = 0; h < hosts; ++h) {
      if (!rate.empty()) cluster_.RemoveBandwidthLimit(h);
    }
    const nlohmann::json submitted = nlohmann::json::parse(r.out, nullptr, false);
    nlohmann::json job;  // with its events, which submit's summary leaves out
    if (submitted.is_object() && submitted.contains("id")) {
      const auto status = cluster_.Run(0, {dtrain_, "--socket", daemons_[0].socket, "status",
                                           std::to_string(submitted["id"].get<int>()), "--json"});
      job = nlohmann::json::parse(status.out, nullptr, false);
    }
    const double seconds = job.is_object() ? bench::RunningSeconds(job) : 0.0;
    if (seconds <= 0.0) {
      std::fprintf(stderr, "%s: %s\n%s\n", label.c_str(), r.err.c_str(),
                   job.is_object() ? job.dump().c_str() : r.out.c_str());
    }
    return seconds;
  }

 private:
  testing::NetnsCluster cluster_;
  std::string dtrain_;
  std::vector<testing::NetnsDaemon> daemons_;
};

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
