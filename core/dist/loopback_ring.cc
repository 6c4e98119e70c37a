#include "core/dist/loopback_ring.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>

#include "core/dist/tcp_link.h"
#include "core/net/frame_stream.h"

namespace dtrain::dist {
namespace {

std::string SystemError(const std::string& what) { return what + ": " + std::strerror(errno); }

// A listening socket on 127.0.0.1 at a port the kernel picks.
Result<std::pair<int, std::uint16_t>> ListenLoopback(int backlog) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Error(SystemError("cannot create a TCP socket"));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  if (::bind(fd, sa, len) != 0 || ::listen(fd, backlog) != 0 || ::getsockname(fd, sa, &len) != 0) {
    Status failed = Status::Error(SystemError("cannot listen on 127.0.0.1"));
    ::close(fd);
    return failed;
  }
  return std::pair{fd, ntohs(addr.sin_port)};
}

// Accepts one connection on `listener` by the deadline.
Result<net::FrameStream> Accept(int listener, Deadline deadline,
                                std::chrono::milliseconds timeout) {
  for (;;) {
    const auto left = Remaining(deadline);
    pollfd p{.fd = listener, .events = POLLIN, .revents = 0};
    const int ready =
        ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), INT_MAX)));
    if (ready < 0 && errno != EINTR) return Status::Error(SystemError("poll on a listener"));
    if (ready > 0) {
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) return net::FrameStream(fd);
      if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN) {
        return Status::Error(SystemError("accept"));
      }
    }
    if (ready == 0 && Clock::now() >= deadline) {
      return Status::Error("timeout: no connection within " + std::to_string(timeout.count()) +
                           " ms");
    }
  }
}

}  // namespace

LoopbackRing::LoopbackRing(std::vector<int> listeners, std::vector<std::uint16_t> ports)
    : listeners_(std::move(listeners)), ports_(std::move(ports)) {}

LoopbackRing::LoopbackRing(LoopbackRing&& other) noexcept
    : listeners_(std::exchange(other.listeners_, {})), ports_(std::exchange(other.ports_, {})) {}

LoopbackRing& LoopbackRing::operator=(LoopbackRing&& other) noexcept {
  if (this != &other) {
    CloseListeners();
    listeners_ = std::exchange(other.listeners_, {});
    ports_ = std::exchange(other.ports_, {});
  }
  return *this;
}

LoopbackRing::~LoopbackRing() { CloseListeners(); }

void LoopbackRing::CloseListeners() {
  for (int fd : listeners_) ::close(fd);
  listeners_.clear();
}

Result<LoopbackRing> LoopbackRing::Listen(int world) {
  if (world < 1)
    return Status::Error("a ring needs at least one rank, not " + std::to_string(world));
  LoopbackRing ring({}, {});
  for (int r = 0; r < world; ++r) {
    Result<std::pair<int, std::uint16_t>> l = ListenLoopback(/*backlog=*/4);
    if (!l.ok()) return l.status();
    ring.listeners_.push_back(l.value().first);
    ring.ports_.push_back(l.value().second);
  }
  return ring;
}

Result<RingLinks> LoopbackRing::Join(int rank, std::chrono::milliseconds timeout) const {
  const int n = world();
  if (rank < 0 || rank >= n) {
    return Status::Error("rank " + std::to_string(rank) + " is not in a ring of " +
                         std::to_string(n));
  }
  const std::string me = "rank " + std::to_string(rank) + ": ";
  const Deadline deadline = Clock::now() + timeout;
  RingLinks links;
  if (n == 1) return links;
  const int right = (rank + 1) % n;
  const int left = (rank + n - 1) % n;
  // With two ranks the one connection goes from rank 0 to rank 1.
  if (n > 2 || rank == 0) {
    Result<net::FrameStream> s = net::FrameStream::ConnectTcp(
        "127.0.0.1", ports_[static_cast<std::size_t>(right)], Remaining(deadline));
    if (!s.ok())
      return Status::Error(me + "connecting to rank " + std::to_string(right) + ": " +
                           s.status().message());
    s.value().set_sender(static_cast<std::uint32_t>(rank));
    if (Status hello =
            s.value().WriteString(net::MessageType::kHeartbeat, 0, 0, "", Remaining(deadline));
        !hello.ok()) {
      return Status::Error(me + "introducing itself to rank " + std::to_string(right) + ": " +
                           hello.message());
    }
    Result<std::unique_ptr<TcpLink>> link = TcpLink::Create(std::move(s).value(), rank, right);
    if (!link.ok()) return link.status();
    links.right = link.value().get();
    links.owned.push_back(std::move(link).value());
  }
  if (n > 2 || rank == 1) {
    Result<net::FrameStream> s =
        Accept(listeners_[static_cast<std::size_t>(rank)], deadline, timeout);
    if (!s.ok())
      return Status::Error(me + "waiting for rank " + std::to_string(left) + ": " +
                           s.status().message());
    Result<net::Frame> hello = s.value().Read(Remaining(deadline));
    if (!hello.ok())
      return Status::Error(me + "waiting for rank " + std::to_string(left) +
                           " to introduce itself: " + hello.status().message());
    const net::FrameHeader& h = hello.value().header;
    if (h.type != net::MessageType::kHeartbeat || h.sender != static_cast<std::uint32_t>(left)) {
      return Status::Error(me + "expected rank " + std::to_string(left) + "'s heartbeat from " +
                           s.value().peer() + ", got a " +
                           std::string(net::MessageTypeName(h.type)) + " frame from sender " +
                           std::to_string(h.sender));
    }
    Result<std::unique_ptr<TcpLink>> link = TcpLink::Create(std::move(s).value(), rank, left);
    if (!link.ok()) return link.status();
    links.left = link.value().get();
    links.owned.push_back(std::move(link).value());
  }
  if (n == 2) links.left = links.right = links.owned.front().get();
  return links;
}

Result<std::vector<RingLinks>> LoopbackRing::ConnectAll(int world,
                                                        std::chrono::milliseconds timeout) {
  Result<LoopbackRing> ring = Listen(world);
  if (!ring.ok()) return ring.status();
  std::vector<std::optional<Result<RingLinks>>> joined(static_cast<std::size_t>(world));
  {
    std::vector<std::jthread> ranks;
    for (int r = 0; r < world; ++r) {
      ranks.emplace_back(
          [&, r] { joined[static_cast<std::size_t>(r)] = ring.value().Join(r, timeout); });
    }
  }
  std::vector<RingLinks> all;
  for (std::optional<Result<RingLinks>>& j : joined) {
    if (!j->ok()) return j->status();
    all.push_back(std::move(*j).value());
  }
  return all;
}

}  // namespace dtrain::dist
