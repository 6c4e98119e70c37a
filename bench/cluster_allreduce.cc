// Ring all-reduce bus bandwidth between "hosts" that are network namespaces joined by veth pairs
// and a bridge (tests/cluster/netns_cluster.h), beside the same ring on loopback, measured in one
// run; then across the namespaces with every host's link limited by a tbf qdisc, where the
// network and not the CPU is the bottleneck, as a share of the link's rate.
//   - loopback: the ranks are processes on 127.0.0.1 (as bench_allreduce_bandwidth);
//   - netns: rank r is a process in host r, listening on its namespace address;
//   - netns @ RATE: the same with `tc qdisc ... tbf rate RATE` on each host's link (both ways).
// Bus bandwidth = 2(n-1)/n * bytes / time per op, median over the ops (after one warm-up op).
// Needs root (CI runs as root). Usage: bench_cluster_allreduce [--quick]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/loopback_exchange.h"
#include "cluster/netns_cluster.h"
#include "core/dist/peer_links.h"
#include "core/dist/ring_allreduce.h"

namespace {

using namespace std::chrono_literals;
using dtrain::bench::Median;
using dtrain::testing::NetnsCluster;
using dtrain::testing::NetnsScope;
using Clock = std::chrono::steady_clock;

constexpr std::uint16_t kPort = 7200;  // the same in every namespace: each has its own ports

// Seconds per all-reduce of `floats` floats among the cluster's hosts, rank r in host r.
double NetnsRingSeconds(const NetnsCluster& cluster, std::size_t floats, int reps) {
  const int n = cluster.hosts();
  std::vector<dtrain::dist::Endpoint> endpoints;
  for (int h = 0; h < n; ++h) endpoints.push_back({cluster.Address(h), kPort});
  // Every rank's listener exists before any rank connects: opened here, each in its host's
  // namespace, and inherited by the forked ranks.
  std::vector<dtrain::dist::PeerListener> listeners;
  for (int h = 0; h < n; ++h) {
    NetnsScope inside(cluster, h);
    auto listener = dtrain::dist::PeerListener::Open(cluster.Address(h), 4, kPort);
    if (!listener.ok()) {
      std::fprintf(stderr, "%s\n", listener.status().message().c_str());
      return NAN;
    }
    listeners.push_back(std::move(listener).value());
  }
  return dtrain::bench::InProcesses(n, [&](int rank) -> double {
    NetnsScope inside(cluster, rank);  // a forked child has one thread: the whole process moves
    const dtrain::dist::PeerListener& listener = listeners[static_cast<std::size_t>(rank)];
    auto links = dtrain::dist::JoinRing(rank, endpoints, listener, Clock::now() + 30s);
    if (!links.ok()) {
      std::fprintf(stderr, "%s\n", links.status().message().c_str());
      return NAN;
    }
    dtrain::dist::RingAllReduce ring(rank, n, links.value().left, links.value().right,
                                     {.timeout = 120s});
    std::vector<float> data(floats, 1.0f + static_cast<float>(rank));
    std::vector<double> times;
    for (int op = 0; op <= reps; ++op) {
      const auto start = Clock::now();
      if (!ring.AllReduceMean(data, static_cast<std::uint32_t>(op)).ok()) return NAN;
      if (op > 0) times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    return Median(times);
  });
}

double BusGbps(int n, std::size_t bytes, double seconds) {
  return 2.0 * (n - 1) / n * static_cast<double>(bytes) / seconds / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::string why;
  if (!dtrain::testing::NetnsAvailable(&why)) {
    std::fprintf(stderr, "bench_cluster_allreduce: %s\n", why.c_str());
    return 2;
  }
  const std::vector<std::size_t> sizes = {std::size_t{4} << 20, std::size_t{64} << 20};
  // tbf rates, their bits per second, and buckets of about 10 ms at that rate.
  struct Limit {
    std::string rate;
    double bps;
    std::string burst;
  };
  const std::vector<Limit> rates = {{"1gbit", 1e9, "1250kb"}, {"100mbit", 1e8, "125kb"}};
  std::printf("ring all-reduce bus bandwidth (GB/s), ranks as processes; netns: one host each, "
              "veth + bridge\n");
  std::printf("%-3s %-8s %9s %9s %9s", "n", "size", "loopback", "netns", "/loop");
  for (const Limit& l : rates) std::printf(" %9s %8s", ("@" + l.rate).c_str(), "/rate");
  std::printf("\n");
  for (const int n : {2, 4}) {
    NetnsCluster cluster(n);
    for (const std::size_t bytes : sizes) {
      const std::size_t floats = bytes / sizeof(float);
      const int reps = quick ? 3 : (bytes > (8u << 20) ? 5 : 20);
      const double loop = BusGbps(n, bytes, dtrain::bench::RingSeconds(n, floats, reps, {}));
      const double netns = BusGbps(n, bytes, NetnsRingSeconds(cluster, floats, reps));
      std::printf("%-3d %-8s %9.2f %9.2f %9.2f", n, bytes >= (64u << 20) ? "64 MiB" : "4 MiB",
                  loop, netns, netns / loop);
      for (const Limit& l : rates) {
        for (int h = 0; h < n; ++h) cluster.LimitBandwidth(h, l.rate, l.burst);
        // At 100 Mbit/s a 64 MiB op takes seconds: fewer of them.
        const int limited_reps = l.bps < 5e8 ? std::max(2, reps / 5) : reps;
        const double limited = BusGbps(n, bytes, NetnsRingSeconds(cluster, floats, limited_reps));
        for (int h = 0; h < n; ++h) cluster.RemoveBandwidthLimit(h);
        // Each rank sends its bus bytes through its own link: the rate bounds the bus bandwidth.
        std::printf(" %9.3f %8.2f", limited, limited * 8e9 / l.bps);
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  return 0;
}
