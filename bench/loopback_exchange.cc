#include "bench/loopback_exchange.h"

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
#include <cstdint>
#include <cstdio>
#include <span>

#include "core/dist/loopback_ring.h"
#include "core/net/frame.h"

namespace dtrain::bench {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

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
  return net::PayloadCrc({&part, 1});
}

}  // namespace

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

double RingSeconds(int n, std::size_t floats, int reps, dist::RingOptions options,
                   dist::LinkTransport transport, bool checksums) {
  Result<dist::LoopbackRing> listening = dist::LoopbackRing::Listen(n, transport);
  if (!listening.ok()) {
    std::fprintf(stderr, "%s\n", listening.status().message().c_str());
    return NAN;
  }
  return InProcesses(n, [&](int rank) -> double {
    Result<dist::RingLinks> links = listening.value().Join(rank, 10s);
    if (!links.ok()) {
      std::fprintf(stderr, "%s\n", links.status().message().c_str());
      return NAN;
    }
    for (const auto& link : links.value().owned) link->SetSendChecksums(checksums);
    dist::RingAllReduce ring(rank, n, links.value().left, links.value().right, options);
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

}  // namespace dtrain::bench
