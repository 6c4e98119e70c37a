#include "core/dist/peer_links.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <future>
#include <optional>
#include <utility>

#include "core/dist/shm_link.h"
#include "core/net/auth.h"

namespace dtrain::dist {
namespace {

std::string SystemError(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

Result<PeerListener> PeerListener::Open(const std::string& host, int backlog,
                                        std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return Status::Error("cannot listen on '" + host + "': not an IPv4 address");
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Error(SystemError("cannot create a TCP socket"));
  const int one = 1;
  if (port != 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  socklen_t len = sizeof addr;
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  if (::bind(fd, sa, len) != 0 || ::listen(fd, backlog) != 0 || ::getsockname(fd, sa, &len) != 0) {
    Status failed = Status::Error(SystemError("cannot listen on " + host));
    ::close(fd);
    return failed;
  }
  return PeerListener(fd, ntohs(addr.sin_port));
}

PeerListener::PeerListener(PeerListener&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(other.port_) {}

PeerListener& PeerListener::operator=(PeerListener&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    port_ = other.port_;
  }
  return *this;
}

PeerListener::~PeerListener() {
  if (fd_ >= 0) ::close(fd_);
}

Result<IntroducedPeer> PeerListener::Introduce(int fd, Deadline deadline) const {
  // Nothing larger than a token is read before the token checked out.
  constexpr std::size_t kTokenBytes = 64;
  net::FrameStream stream(fd, static_cast<std::uint32_t>(std::max(token_.size(), kTokenBytes)));
  Result<net::Frame> hello = stream.Read(Remaining(deadline));
  if (!hello.ok()) {
    return Status::Error("a peer from " + stream.peer() + " did not introduce itself: " +
                         hello.status().message());
  }
  if (hello.value().header.type != net::MessageType::kHeartbeat) {
    return Status::Error("a peer from " + stream.peer() + " opened with a " +
                         std::string(net::MessageTypeName(hello.value().header.type)) +
                         " frame, not an introduction");
  }
  if (!token_.empty() && !net::TokensEqual(hello.value().payload, token_)) {
    return Status::Error("a peer from " + stream.peer() + " did not have this job's token");
  }
  stream.set_max_payload(net::kDefaultMaxPayload);
  return IntroducedPeer{hello.value().header.sender, std::move(stream)};
}

Result<IntroducedPeer> PeerListener::Accept(Deadline deadline) const {
  for (;;) {
    const auto left = Remaining(deadline);
    pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
    const int ready =
        ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), INT_MAX)));
    if (ready < 0 && errno != EINTR) return Status::Error(SystemError("poll on a listener"));
    if (ready > 0) {
      const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        Result<IntroducedPeer> peer =
            Introduce(fd, std::min(deadline, Clock::now() + kIntroductionTimeout));
        // With a token, a stranger costs its own connection only: wait for the right peer.
        if (peer.ok() || token_.empty()) return peer;
        ++refused_;
        continue;
      }
      if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN) {
        return Status::Error(SystemError("accept"));
      }
    }
    if (ready == 0 && Clock::now() >= deadline) {
      return Status::Error("timeout: no connection came in time");
    }
  }
}

namespace {

// A connection to `to`, introduced as `self_id` with `token`.
Result<net::FrameStream> ConnectIntroduced(const Endpoint& to, int self_id, int peer_id,
                                           const std::string& peer_label, Deadline deadline,
                                           const std::string& token) {
  const std::string who = (peer_label.empty() ? "rank " + std::to_string(peer_id) : peer_label) +
                          " at " + to.host + ":" + std::to_string(to.port);
  Result<net::FrameStream> s = net::FrameStream::ConnectTcp(to.host, to.port, Remaining(deadline));
  if (!s.ok()) return Status::Error("connecting to " + who + ": " + s.status().message());
  s.value().set_sender(static_cast<std::uint32_t>(self_id));
  if (Status hello =
          s.value().WriteString(net::MessageType::kHeartbeat, 0, 0, token, Remaining(deadline));
      !hello.ok()) {
    return Status::Error("introducing this process to " + who + ": " + hello.message());
  }
  return s;
}

// The next connection on `listener`, which must come from `expected_id`.
Result<net::FrameStream> AcceptIntroduced(const PeerListener& listener, int expected_id,
                                          const std::string& peer_label, Deadline deadline) {
  const std::string who =
      peer_label.empty() ? "rank " + std::to_string(expected_id) : peer_label;
  Result<IntroducedPeer> in = listener.Accept(deadline);
  if (!in.ok()) return Status::Error("waiting for " + who + ": " + in.status().message());
  if (in.value().id != static_cast<std::uint32_t>(expected_id)) {
    return Status::Error("expected " + who + " to connect, but " + in.value().stream.peer() +
                         " introduced itself as " + std::to_string(in.value().id));
  }
  return std::move(in.value().stream);
}

// Best effort, as JoinRing promises.
void UseRingCongestionControl(const net::FrameStream& stream) {
  ::setsockopt(stream.fd(), IPPROTO_TCP, TCP_CONGESTION, kRingCongestionControl.data(),
               static_cast<socklen_t>(kRingCongestionControl.size()));
}

}  // namespace

Result<std::unique_ptr<Link>> MakeLink(net::FrameStream stream, LinkTransport transport,
                                       ShmRole role, int self_id, int peer_id,
                                       const std::string& peer_label, Deadline deadline) {
  if (transport == LinkTransport::kAuto) {
    return NegotiateLink(std::move(stream), role, self_id, peer_id, peer_label, deadline);
  }
  Result<std::unique_ptr<TcpLink>> tcp =
      TcpLink::Create(std::move(stream), self_id, peer_id, peer_label);
  if (!tcp.ok()) return tcp.status();
  return std::unique_ptr<Link>(std::move(tcp).value());
}

Result<std::unique_ptr<Link>> ConnectLink(const Endpoint& to, int self_id, int peer_id,
                                          const std::string& peer_label, Deadline deadline,
                                          const std::string& token, LinkTransport transport) {
  Result<net::FrameStream> s = ConnectIntroduced(to, self_id, peer_id, peer_label, deadline, token);
  if (!s.ok()) return s.status();
  return MakeLink(std::move(s).value(), transport, ShmRole::kCreator, self_id, peer_id,
                  peer_label, deadline);
}

Result<std::unique_ptr<TcpLink>> AcceptPeer(const PeerListener& listener, int self_id,
                                            int expected_id, const std::string& peer_label,
                                            Deadline deadline) {
  Result<net::FrameStream> s = AcceptIntroduced(listener, expected_id, peer_label, deadline);
  if (!s.ok()) return s.status();
  return TcpLink::Create(std::move(s).value(), self_id, expected_id, peer_label);
}

Result<RingLinks> JoinRing(int rank, const std::vector<Endpoint>& workers,
                           const PeerListener& mine, Deadline deadline, const std::string& token,
                           LinkTransport transport) {
  const int n = static_cast<int>(workers.size());
  if (rank < 0 || rank >= n) {
    return Status::Error("rank " + std::to_string(rank) + " is not in a ring of " +
                         std::to_string(n));
  }
  const std::string me = "rank " + std::to_string(rank) + ": ";
  RingLinks links;
  if (n == 1) return links;
  const int right = (rank + 1) % n;
  const int left = (rank + n - 1) % n;
  // With two ranks the one connection goes from rank 0 to rank 1. Every rank connects to its
  // right before it accepts its left, as before any handshake: the listen backlog lets that
  // finish. Each connection's upgrade handshake then needs both of its ends at once, so the left
  // one runs on a thread of its own while this thread negotiates with the right.
  std::optional<net::FrameStream> to_right, from_left;
  if (n > 2 || rank == 0) {
    Result<net::FrameStream> s = ConnectIntroduced(workers[static_cast<std::size_t>(right)], rank,
                                                   right, "", deadline, token);
    if (!s.ok()) return Status::Error(me + s.status().message());
    UseRingCongestionControl(s.value());
    to_right.emplace(std::move(s).value());
  }
  if (n > 2 || rank == 1) {
    Result<net::FrameStream> s = AcceptIntroduced(mine, left, "", deadline);
    if (!s.ok()) return Status::Error(me + s.status().message());
    UseRingCongestionControl(s.value());
    from_left.emplace(std::move(s).value());
  }
  const auto make_left = [&] {
    return MakeLink(std::move(*from_left), transport, ShmRole::kOpener, rank, left, "",
                    deadline);
  };
  std::future<Result<std::unique_ptr<Link>>> left_link;
  if (from_left && to_right && transport == LinkTransport::kAuto) {
    left_link = std::async(std::launch::async, make_left);
  }
  if (to_right) {
    auto link =
        MakeLink(std::move(*to_right), transport, ShmRole::kCreator, rank, right, "", deadline);
    if (!link.ok()) return Status::Error(me + link.status().message());
    links.right = link.value().get();
    links.owned.push_back(std::move(link).value());
  }
  if (from_left) {
    auto link = left_link.valid() ? left_link.get() : make_left();
    if (!link.ok()) return Status::Error(me + link.status().message());
    links.left = link.value().get();
    links.owned.push_back(std::move(link).value());
  }
  if (n == 2) links.left = links.right = links.owned.front().get();
  return links;
}

}  // namespace dtrain::dist
