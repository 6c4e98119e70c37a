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
#include "core/unique_fd.h"

namespace dtrain::dist {
namespace {

std::string SystemError(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

Result<PeerListener> PeerListener::Open(const std::string& host, int backlog, std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return Status::Error("cannot listen on '" + host + "': not an IPv4 address");
  }
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return Status::Error(SystemError("cannot create a TCP socket"));
  const int one = 1;
  if (port != 0) ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  socklen_t len = sizeof addr;
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  if (::bind(fd.get(), sa, len) != 0 || ::listen(fd.get(), backlog) != 0 ||
      ::getsockname(fd.get(), sa, &len) != 0) {
    return Status::Error(SystemError("cannot listen on " + host));
  }
  return PeerListener(fd.release(), ntohs(addr.sin_port));
}

namespace {

// Nothing larger than a token is read before the token checked out.
constexpr std::size_t kTokenBytes = 64;

}  // namespace

std::optional<Result<IntroducedPeer>> PeerListener::ReadIntroduction(Pending& p) const {
  const auto max_payload = static_cast<std::uint32_t>(std::max(token_.size(), kTokenBytes));
  net::FrameStream stream(p.fd.release(), max_payload);  // owns the descriptor from here on
  const auto refuse = [&stream](const std::string& why) -> std::optional<Result<IntroducedPeer>> {
    return Result<IntroducedPeer>(Status::Error("a peer from " + stream.peer() + " " + why));
  };
  net::FrameHeader header;
  for (;;) {
    std::size_t wanted = net::kHeaderSize;
    if (p.arrived.size() >= net::kHeaderSize) {
      const std::span<const std::uint8_t, net::kHeaderSize> head(p.arrived.data(),
                                                                 net::kHeaderSize);
      if (std::optional<net::FrameError> bad = net::DecodeHeader(head, max_payload, header)) {
        return refuse("did not introduce itself: " + std::string(net::FrameErrorName(*bad)));
      }
      wanted += header.length;
    }
    if (p.arrived.size() == wanted) break;
    const std::size_t had = p.arrived.size();
    p.arrived.resize(wanted);
    const ssize_t got = ::recv(stream.fd(), p.arrived.data() + had, wanted - had, MSG_DONTWAIT);
    p.arrived.resize(had + static_cast<std::size_t>(std::max<ssize_t>(got, 0)));
    if (got == 0) return refuse("closed before introducing itself");
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      p.fd.reset(stream.Release());  // still the listener's: it waits on
      return std::nullopt;
    }
    if (got < 0) return refuse(SystemError("did not introduce itself"));
  }
  const std::span<const std::uint8_t> payload(p.arrived.data() + net::kHeaderSize, header.length);
  if (!net::PayloadMatches(header, payload)) {
    return refuse("did not introduce itself: its introduction's checksum does not match");
  }
  if (header.type != net::MessageType::kHeartbeat) {
    return refuse("opened with a " + std::string(net::MessageTypeName(header.type)) +
                  " frame, not an introduction");
  }
  const std::string_view token(reinterpret_cast<const char*>(payload.data()), payload.size());
  if (!token_.empty() && !net::TokensEqual(token, token_)) {
    return refuse("did not have this job's token");
  }
  stream.set_max_payload(net::kDefaultMaxPayload);
  return Result<IntroducedPeer>(IntroducedPeer{header.sender, std::move(stream)});
}

Result<IntroducedPeer> PeerListener::Accept(Deadline deadline) const {
  std::vector<pollfd> polled;
  for (;;) {
    // Late introductions are refused; the listener and every pending connection are watched.
    const Clock::time_point now = Clock::now();
    std::erase_if(pending_, [&](const Pending& p) {
      if (now < p.until) return false;
      ++refused_;  // erasing it closes it
      return true;
    });
    Clock::time_point wake = deadline;
    polled.assign(1, pollfd{.fd = fd_.get(), .events = POLLIN, .revents = 0});
    for (const Pending& p : pending_) {
      polled.push_back({.fd = p.fd.get(), .events = POLLIN, .revents = 0});
      wake = std::min(wake, p.until);
    }
    const auto left =
        std::max<std::int64_t>(0, std::chrono::ceil<std::chrono::milliseconds>(wake - now).count());
    const int ready = ::poll(polled.data(), polled.size(),
                             static_cast<int>(std::min<std::int64_t>(left, INT_MAX)));
    if (ready < 0 && errno != EINTR) return Status::Error(SystemError("poll on a listener"));
    // Pending connections first (pending_ is in the order polled), then a new one.
    for (std::size_t i = 1; ready > 0 && i < polled.size(); ++i) {
      if (polled[i].revents == 0) continue;
      auto at = std::find_if(pending_.begin(), pending_.end(),
                             [fd = polled[i].fd](const Pending& p) { return p.fd.get() == fd; });
      if (at == pending_.end()) continue;  // each polled descriptor is a pending one; be sure
      std::optional<Result<IntroducedPeer>> peer = ReadIntroduction(*at);
      if (!peer) continue;  // more of it is still to come
      pending_.erase(at);
      // With a token, a stranger costs its own connection only: wait for the right peer.
      if (peer->ok() || token_.empty()) return std::move(*peer);
      ++refused_;
    }
    if (ready > 0 && (polled[0].revents & POLLIN) != 0) {
      const int fd = ::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        if (pending_.size() >= kMaxPendingIntroductions) {
          pending_.erase(pending_.begin());  // closes the oldest
          ++refused_;
        }
        pending_.push_back({UniqueFd(fd), Clock::now() + kIntroductionTimeout, {}});
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
  const std::string who = peer_label.empty() ? "rank " + std::to_string(expected_id) : peer_label;
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
  return MakeLink(std::move(s).value(), transport, ShmRole::kCreator, self_id, peer_id, peer_label,
                  deadline);
}

Result<std::unique_ptr<TcpLink>> AcceptPeer(const PeerListener& listener, int self_id,
                                            int expected_id, const std::string& peer_label,
                                            Deadline deadline) {
  Result<net::FrameStream> s = AcceptIntroduced(listener, expected_id, peer_label, deadline);
  if (!s.ok()) return s.status();
  return TcpLink::Create(std::move(s).value(), self_id, expected_id, peer_label);
}

Result<RingLinks> JoinRing(int rank, const std::vector<Endpoint>& workers, const PeerListener& mine,
                           Deadline deadline, const std::string& token, LinkTransport transport) {
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
    return MakeLink(std::move(*from_left), transport, ShmRole::kOpener, rank, left, "", deadline);
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
