// Ring all-reduce bus bandwidth on loopback TCP and over shared memory, ranks as separate
// processes, against raw TCP measured in the same run:
//   - dtrain: RingAllReduce::AllReduceMean over TcpLinks (LoopbackRing), n = 2 and 4 processes
//     (n = 2 by direct exchange unless --ring);
//     (--no-checksum: their frames carry no CRC-32, as with [cluster] checksum = false);
//   - shm: the same over ShmLinks (what JoinRing makes between processes of one host), n = 2
//     and 4, and its ratio to TCP (--no-shm leaves it out);
//     bus bandwidth = 2(n-1)/n * bytes / time, the bytes each rank sends (and receives) per op
//     over the time of one op;
//   - raw: 2 processes over one TCP connection, each sending `bytes` and receiving `bytes` at once
//     (one thread each, non-blocking send/recv under poll, no framing): what the loopback link
//     carries full duplex, the ceiling for n = 2;
//   - raw+crc: the same, each side also computing the CRC-32 of what it sends and receives in
//     segment-sized pieces, as the frame format requires (net::PayloadCrc), to separate the cost
//     of the checksum from that of the algorithm.
// Each size runs a few rounds of all four side by side, each a median over many ops (fewer for
// larger sizes); a ratio is taken within a round, and the median round is printed. Four busy
// threads share two cores here, so single rounds scatter by tens of percent.
// Usage: bench_allreduce_bandwidth [--quick] [--rounds N] [--bytes N]... [--segment FLOATS]
//                                  [--spin US] [--yield US] [--threaded] [--ring] [--no-shm]
//                                  [--no-checksum] [--gather-sum BYTES] [--scatter-sum BYTES]
// (--threaded: RingOptions::caller_sends off; --ring: the two-phase ring for n = 2 too;
// --gather-sum: RingOptions::gather_sum_bytes, --scatter-sum: RingOptions::scatter_sum_bytes;
// both 0 for the ring at every size.)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench/loopback_exchange.h"
#include "core/dist/ring_allreduce.h"

namespace {

using dtrain::bench::Median;
using dtrain::bench::RawSeconds;
using dtrain::bench::RingSeconds;
using dtrain::dist::RingOptions;

std::string SizeName(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

// Bandwidths of one round, GB/s: raw, raw+crc, ring n=2, ring n=4 (TCP), then over shm.
constexpr int kColumns = 6;

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3;
  double rep_scale = 1.0;
  std::vector<std::size_t> sizes;
  RingOptions options;
  bool shm = true;
  bool checksums = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      rounds = 1;
      rep_scale = 0.25;
    } else if (arg == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--bytes" && i + 1 < argc) {
      sizes.push_back(std::strtoul(argv[++i], nullptr, 10) / sizeof(float) * sizeof(float));
    } else if (arg == "--segment" && i + 1 < argc) {
      options.segment_floats = std::strtoul(argv[++i], nullptr, 10);
    } else if (arg == "--spin" && i + 1 < argc) {
      options.spin = std::chrono::microseconds(std::strtol(argv[++i], nullptr, 10));
    } else if (arg == "--yield" && i + 1 < argc) {
      options.yield = std::chrono::microseconds(std::strtol(argv[++i], nullptr, 10));
    } else if (arg == "--gather-sum" && i + 1 < argc) {
      options.gather_sum_bytes = std::strtoul(argv[++i], nullptr, 10);
    } else if (arg == "--scatter-sum" && i + 1 < argc) {
      options.scatter_sum_bytes = std::strtoul(argv[++i], nullptr, 10);
    } else if (arg == "--threaded") {
      options.caller_sends = false;
    } else if (arg == "--ring") {
      options.direct_exchange = false;
    } else if (arg == "--no-shm") {
      shm = false;
    } else if (arg == "--no-checksum") {
      checksums = false;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--rounds N] [--bytes N]... [--segment FLOATS]\n"
                   "       [--spin MICROSECONDS] [--yield MICROSECONDS] [--threaded] [--ring]\n"
                   "       [--no-shm] [--no-checksum] [--gather-sum BYTES] [--scatter-sum BYTES]\n",
                   argv[0]);
      return 2;
    }
  }
  if (sizes.empty()) {
    // The small sizes are what compressed gradients send (PowerSGD's factors: tens of KiB).
    for (std::size_t kib : {16u, 32u, 64u, 128u, 256u}) sizes.push_back(kib << 10);
    sizes.insert(sizes.end(), {std::size_t{4} << 20, std::size_t{64} << 20});
  }
  const std::size_t segment_bytes = options.segment_floats * sizeof(float);
  std::printf("ring all-reduce (mean) over TCP on 127.0.0.1 (%s)%s vs raw full-duplex TCP, ranks "
              "as processes\n",
              checksums ? "frames with CRC-32" : "frames without checksum",
              shm ? " and over shared memory" : "");
  std::printf(
      "segment %zu floats (%s), yield %lld us, spin %lld us, %s, n=2 by %s, n=4 gathers and sums "
      "up to %s sent, by chunks both ways up to %s sent, %u cores;\nGB/s = 1e9 bytes/s; medians of "
      "%d round(s), ratios per round (both "
      "measured in it), then their median\n",
      options.segment_floats, SizeName(segment_bytes).c_str(),
      static_cast<long long>(options.yield.count()), static_cast<long long>(options.spin.count()),
      options.caller_sends ? "caller sends" : "threaded",
      options.direct_exchange ? "direct exchange" : "ring",
      SizeName(options.gather_sum_bytes).c_str(), SizeName(options.scatter_sum_bytes).c_str(),
      std::thread::hardware_concurrency(), rounds);
  std::printf("%-8s %8s %8s | %8s %7s %7s | %8s %7s %7s", "size", "raw", "raw+crc", "n=2", "/raw",
              "/r+crc", "n=4", "/raw", "/r+crc");
  if (shm) std::printf(" | %8s %7s %8s %7s", "shm n=2", "/tcp", "shm n=4", "/tcp");
  std::printf("\n");
  for (std::size_t bytes : sizes) {
    const int reps = std::max(
        3, static_cast<int>(rep_scale * std::clamp(static_cast<double>(std::size_t{256} << 20) /
                                                       static_cast<double>(bytes),
                                                   5.0, 200.0)));
    std::vector<double> columns[kColumns];
    // n=2/raw, n=2/raw+crc, n=4/raw, n=4/raw+crc, shm n=2/tcp n=2, shm n=4/tcp n=4
    std::vector<double> ratios[6];
    for (int round = 0; round < rounds; ++round) {
      double gbps[kColumns];
      gbps[0] = static_cast<double>(bytes) / RawSeconds(bytes, reps, 0) / 1e9;
      gbps[1] = static_cast<double>(bytes) / RawSeconds(bytes, reps, segment_bytes) / 1e9;
      for (int i = 0; i < 2; ++i) {
        const int n = i == 0 ? 2 : 4;
        const double moved = 2.0 * (n - 1) / n * static_cast<double>(bytes);
        gbps[2 + i] = moved /
                      RingSeconds(n, bytes / sizeof(float), reps, options,
                                  dtrain::dist::LinkTransport::kTcp, checksums) /
                      1e9;
        gbps[4 + i] = shm ? moved /
                                RingSeconds(n, bytes / sizeof(float), reps, options,
                                            dtrain::dist::LinkTransport::kAuto) /
                                1e9
                          : 0.0;
      }
      for (int c = 0; c < kColumns; ++c) columns[c].push_back(gbps[c]);
      ratios[0].push_back(gbps[2] / gbps[0]);
      ratios[1].push_back(gbps[2] / gbps[1]);
      ratios[2].push_back(gbps[3] / gbps[0]);
      ratios[3].push_back(gbps[3] / gbps[1]);
      ratios[4].push_back(gbps[4] / gbps[2]);
      ratios[5].push_back(gbps[5] / gbps[3]);
    }
    std::printf("%-8s %8.2f %8.2f | %8.2f %7.2f %7.2f | %8.2f %7.2f %7.2f",
                SizeName(bytes).c_str(), Median(columns[0]), Median(columns[1]), Median(columns[2]),
                Median(ratios[0]), Median(ratios[1]), Median(columns[3]), Median(ratios[2]),
                Median(ratios[3]));
    if (shm) {
      std::printf(" | %8.2f %7.2f %8.2f %7.2f", Median(columns[4]), Median(ratios[4]),
                  Median(columns[5]), Median(ratios[5]));
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}
