// Ring all-reduce bus bandwidth on loopback TCP, ranks as separate processes, against raw TCP
// measured in the same run:
//   - dtrain: RingAllReduce::AllReduceMean over TcpLinks (LoopbackRing), n = 2 and 4 processes;
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
// Usage: bench_allreduce_bandwidth [--quick] [--bytes N]... [--segment FLOATS] [--spin US]
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/dist/loopback_ring.h"
#include "core/dist/ring_allreduce.h"
#include "core/net/frame.h"

namespace {

using namespace std::chrono_literals;
using dtrain::Status;
using dtrain::dist::RingOptions;
using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs fn(rank) in `n` forked processes; returns what rank 0's fn returned (seconds per op), or
// NaN when any process failed.
double InProcesses(int n, const std::function<double(int)>& fn) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return NAN;
  std::vector<pid_t> children;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) return NAN;
    if (pid == 0) {
      ::close(pipe_fds[0]);
      const double seconds = fn(r);
      if (r == 0 && ::write(pipe_fds[1], &seconds, sizeof seconds) != sizeof seconds) ::_exit(1);
      ::_exit(std::isnan(seconds) ? 1 : 0);
    }
    children.push_back(pid);
  }
  ::close(pipe_fds[1]);
  double seconds = NAN;
  if (::read(pipe_fds[0], &seconds, sizeof seconds) != sizeof seconds) seconds = NAN;
  ::close(pipe_fds[0]);
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) seconds = NAN;
  }
  return seconds;
}

// Seconds per all-reduce of `floats` floats, median over `reps` ops after one warm-up op.
double RingSeconds(int n, std::size_t floats, int reps, RingOptions options) {
  dtrain::Result<dtrain::dist::LoopbackRing> listening = dtrain::dist::LoopbackRing::Listen(n);
  if (!listening.ok()) {
    std::fprintf(stderr, "%s\n", listening.status().message().c_str());
    return NAN;
  }
  return InProcesses(n, [&](int rank) -> double {
    dtrain::Result<dtrain::dist::RingLinks> links = listening.value().Join(rank, 10s);
    if (!links.ok()) {
      std::fprintf(stderr, "%s\n", links.status().message().c_str());
      return NAN;
    }
    dtrain::dist::RingAllReduce ring(rank, n, links.value().left, links.value().right, options);
    std::vector<float> data(floats);
    for (std::size_t i = 0; i < floats; ++i) data[i] = static_cast<float>((i * 7 + rank) % 13);
    std::vector<double> times;
    for (int op = 0; op <= reps; ++op) {
      const Clock::time_point start = Clock::now();
      if (Status s = ring.AllReduceMean(data, static_cast<std::uint32_t>(op)); !s.ok()) {
        std::fprintf(stderr, "%s\n", s.message().c_str());
        return NAN;
      }
      if (op > 0) times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    return Median(times);
  });
}

// A listening socket on 127.0.0.1, made before forking, and its port.
bool Listen(int& fd, std::uint16_t& port) {
  fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  if (fd < 0 || ::bind(fd, sa, len) != 0 || ::listen(fd, 1) != 0 ||
      ::getsockname(fd, sa, &len) != 0) {
    return false;
  }
  port = ntohs(addr.sin_port);
  return true;
}

std::uint32_t Crc(const char* p, std::size_t n) {
  const std::span<const std::uint8_t> part(reinterpret_cast<const std::uint8_t*>(p), n);
  return dtrain::net::PayloadCrc({&part, 1});
}

// Seconds per full-duplex exchange of `bytes` each way between two processes, each driving its
// socket from one thread with non-blocking send and recv under poll (no thread handoffs at all);
// with `crc_piece` > 0, each side also checksums what it sends and receives in pieces of that
// many bytes.
double RawSeconds(std::size_t bytes, int reps, std::size_t crc_piece) {
  int listener = -1;
  std::uint16_t port = 0;
  if (!Listen(listener, port)) return NAN;
  const double seconds = InProcesses(2, [&](int rank) -> double {
    int fd = -1;
    if (rank == 0) {
      fd = ::accept(listener, nullptr, nullptr);
    } else {
      fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(port);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return NAN;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::vector<char> out(bytes, static_cast<char>(rank + 1)), in(bytes);
    volatile std::uint32_t sink = 0;  // keeps the checksums from being optimised away
    const std::size_t piece = crc_piece > 0 ? crc_piece : bytes;
    std::vector<double> times;
    for (int rep = 0; rep <= reps; ++rep) {
      const Clock::time_point start = Clock::now();
      std::size_t sent = 0, summed = 0, got = 0, checked = 0;
      while (sent < bytes || got < bytes) {
        if (crc_piece > 0 && summed == sent && summed < bytes) {
          const std::size_t n = std::min(piece, bytes - summed);
          sink = sink + Crc(out.data() + summed, n);
          summed += n;
        }
        pollfd p{
            .fd = fd,
            .events = static_cast<short>((sent < bytes ? POLLOUT : 0) | (got < bytes ? POLLIN : 0)),
            .revents = 0};
        if (::poll(&p, 1, 10'000) <= 0) return NAN;
        if (p.revents & POLLOUT) {
          const std::size_t limit = crc_piece > 0 ? summed : bytes;
          const ssize_t k =
              ::send(fd, out.data() + sent, limit - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
          if (k < 0 && errno != EAGAIN) return NAN;
          if (k > 0) sent += static_cast<std::size_t>(k);
        }
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
          const ssize_t k = ::recv(fd, in.data() + got, bytes - got, MSG_DONTWAIT);
          if (k == 0 || (k < 0 && errno != EAGAIN)) return NAN;
          if (k > 0) got += static_cast<std::size_t>(k);
        }
        while (crc_piece > 0 && checked < got && (got - checked >= piece || got == bytes)) {
          const std::size_t n = std::min(piece, got - checked);
          sink = sink + Crc(in.data() + checked, n);
          checked += n;
        }
      }
      if (rep > 0) times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    ::close(fd);
    return Median(times);
  });
  ::close(listener);
  return seconds;
}

std::string SizeName(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

// Bandwidths of one round, GB/s: raw, raw+crc, ring n=2, ring n=4.
constexpr int kColumns = 4;

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3;
  double rep_scale = 1.0;
  std::vector<std::size_t> sizes;
  RingOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      rounds = 1;
      rep_scale = 0.25;
    } else if (arg == "--bytes" && i + 1 < argc) {
      sizes.push_back(std::strtoul(argv[++i], nullptr, 10) / sizeof(float) * sizeof(float));
    } else if (arg == "--segment" && i + 1 < argc) {
      options.segment_floats = std::strtoul(argv[++i], nullptr, 10);
    } else if (arg == "--spin" && i + 1 < argc) {
      options.spin = std::chrono::microseconds(std::strtol(argv[++i], nullptr, 10));
    } else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--bytes N]... [--segment FLOATS] [--spin MICROSECONDS]\n",
                   argv[0]);
      return 2;
    }
  }
  if (sizes.empty()) sizes = {std::size_t{256} << 10, std::size_t{4} << 20, std::size_t{64} << 20};
  const std::size_t segment_bytes = options.segment_floats * sizeof(float);
  std::printf("ring all-reduce (mean) vs raw full-duplex TCP, 127.0.0.1, ranks as processes\n");
  std::printf(
      "segment %zu floats (%s), spin %lld us, %u cores; GB/s = 1e9 bytes/s; medians of %d "
      "round(s),\nratios per round (both measured in it), then their median\n",
      options.segment_floats, SizeName(segment_bytes).c_str(),
      static_cast<long long>(options.spin.count()), std::thread::hardware_concurrency(), rounds);
  std::printf("%-8s %8s %8s | %8s %7s %7s | %8s %7s %7s\n", "size", "raw", "raw+crc", "n=2", "/raw",
              "/r+crc", "n=4", "/raw", "/r+crc");
  for (std::size_t bytes : sizes) {
    const int reps = std::max(
        3, static_cast<int>(rep_scale * std::clamp(static_cast<double>(std::size_t{256} << 20) /
                                                       static_cast<double>(bytes),
                                                   5.0, 200.0)));
    std::vector<double> columns[kColumns];
    std::vector<double> ratios[4];  // n=2/raw, n=2/raw+crc, n=4/raw, n=4/raw+crc
    for (int round = 0; round < rounds; ++round) {
      double gbps[kColumns];
      gbps[0] = static_cast<double>(bytes) / RawSeconds(bytes, reps, 0) / 1e9;
      gbps[1] = static_cast<double>(bytes) / RawSeconds(bytes, reps, segment_bytes) / 1e9;
      for (int i = 0; i < 2; ++i) {
        const int n = i == 0 ? 2 : 4;
        const double moved = 2.0 * (n - 1) / n * static_cast<double>(bytes);
        gbps[2 + i] = moved / RingSeconds(n, bytes / sizeof(float), reps, options) / 1e9;
      }
      for (int c = 0; c < kColumns; ++c) columns[c].push_back(gbps[c]);
      ratios[0].push_back(gbps[2] / gbps[0]);
      ratios[1].push_back(gbps[2] / gbps[1]);
      ratios[2].push_back(gbps[3] / gbps[0]);
      ratios[3].push_back(gbps[3] / gbps[1]);
    }
    std::printf("%-8s %8.2f %8.2f | %8.2f %7.2f %7.2f | %8.2f %7.2f %7.2f\n",
                SizeName(bytes).c_str(), Median(columns[0]), Median(columns[1]), Median(columns[2]),
                Median(ratios[0]), Median(ratios[1]), Median(columns[3]), Median(ratios[2]),
                Median(ratios[3]));
    std::fflush(stdout);
  }
  return 0;
}
