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

namespace {

// The introduction of rank `rank` on ring `ring_id`: the rank alone on ring 0, as JoinRing's.
std::uint32_t RingIntroduction(std::uint32_t ring_id, int rank) {
  return (ring_id << kRingIdShift) | static_cast<std::uint32_t>(rank);
}

// One ring's part in JoinRings: its neighbours, and the connections to them once made.
struct RingJoin {
  int left = 0;
  int right = 0;
  std::uint32_t expected = 0;  // the left neighbour's introduction
  std::optional<net::FrameStream> to_right, from_left;
};

// Accepts the left neighbour's connection of every ring in `wanted` into its from_left, in
// whatever order they come, each told apart by its introduction.
Status AcceptLefts(std::vector<RingJoin*> wanted, const PeerListener& mine, Deadline deadline) {
  while (!wanted.empty()) {
    std::string who;
    for (const RingJoin* j : wanted) {
      who += (who.empty() ? "" : " or ") + ("rank " + std::to_string(j->left));
    }
    Result<IntroducedPeer> in = mine.Accept(deadline);
    if (!in.ok()) return Status::Error("waiting for " + who + ": " + in.status().message());
    const auto match = std::find_if(wanted.begin(), wanted.end(), [&](const RingJoin* j) {
      return j->expected == in.value().id;
    });
    if (match == wanted.end()) {
      return Status::Error("expected " + who + " to connect, but " + in.value().stream.peer() +
                           " introduced itself as " + std::to_string(in.value().id));
    }
    UseRingCongestionControl(in.value().stream);
    (*match)->from_left.emplace(std::move(in.value().stream));
    wanted.erase(match);
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<RingLinks>> JoinRings(int rank, const std::vector<RingMembers>& rings,
                                         const std::vector<Endpoint>& endpoints,
                                         const PeerListener& mine, Deadline deadline,
                                         const std::string& token, LinkTransport transport) {
  const std::string me = "rank " + std::to_string(rank) + ": ";
  std::vector<RingJoin> joins(rings.size());
  std::vector<RingJoin*> lefts;
  // Every ring connects to its right before any accepts its left, as before any handshake: the
  // listen backlog lets that finish. With two ranks the one connection goes from the first to the
  // second.
  for (std::size_t k = 0; k < rings.size(); ++k) {
    const std::vector<int>& ranks = rings[k].ranks;
    const auto n = static_cast<int>(ranks.size());
    if (rings[k].id >= (1u << kRingIdShift)) {
      return Status::Error(me + "ring id " + std::to_string(rings[k].id) + " is not below 2^16");
    }
    const auto at = std::find(ranks.begin(), ranks.end(), rank);
    if (at == ranks.end()) {
      return Status::Error("rank " + std::to_string(rank) + " is not in a ring of " +
                           std::to_string(n));
    }
    for (int r : ranks) {
      if (r < 0 || static_cast<std::size_t>(r) >= endpoints.size() ||
          (rings[k].id != 0 && r >= (1 << kRingIdShift))) {
        return Status::Error(me + "no endpoint for rank " + std::to_string(r));
      }
    }
    if (n == 1) continue;
    const auto pos = static_cast<int>(at - ranks.begin());
    RingJoin& j = joins[k];
    j.right = ranks[static_cast<std::size_t>((pos + 1) % n)];
    j.left = ranks[static_cast<std::size_t>((pos + n - 1) % n)];
    j.expected = RingIntroduction(rings[k].id, j.left);
    if (n > 2 || pos == 0) {
      Result<net::FrameStream> s = ConnectIntroduced(
          endpoints[static_cast<std::size_t>(j.right)],
          static_cast<int>(RingIntroduction(rings[k].id, rank)), j.right, "", deadline, token);
      if (!s.ok()) return Status::Error(me + s.status().message());
      UseRingCongestionControl(s.value());
      j.to_right.emplace(std::move(s).value());
    }
    if (n > 2 || pos == 1) lefts.push_back(&j);
  }
  if (Status accepted = AcceptLefts(lefts, mine, deadline); !accepted.ok()) {
    return Status::Error(me + accepted.message());
  }
  // Each connection's upgrade handshake needs both of its ends at once, so with kAuto every link
  // is made on a thread of its own; over TCP they are made here, in turn.
  struct LinkBeingMade {
    std::size_t ring;
    bool right;
    std::future<Result<std::unique_ptr<Link>>> link;
  };
  std::vector<LinkBeingMade> pending;
  for (std::size_t k = 0; k < joins.size(); ++k) {
    RingJoin& j = joins[k];
    for (bool right : {true, false}) {
      std::optional<net::FrameStream>& stream = right ? j.to_right : j.from_left;
      if (!stream) continue;
      const int peer = right ? j.right : j.left;
      const ShmRole role = right ? ShmRole::kCreator : ShmRole::kOpener;
      auto make = [&stream, transport, role, rank, peer, deadline] {
        return MakeLink(std::move(*stream), transport, role, rank, peer, "", deadline);
      };
      const bool async = transport == LinkTransport::kAuto;
      pending.push_back(
          {k, right, std::async(async ? std::launch::async : std::launch::deferred, make)});
    }
  }
  std::vector<RingLinks> links(rings.size());
  Status failed = Status::Ok();
  for (LinkBeingMade& p : pending) {  // every one is waited for, also after a failure
    Result<std::unique_ptr<Link>> link = p.link.get();
    if (!link.ok()) {
      if (failed.ok()) failed = Status::Error(me + link.status().message());
      continue;
    }
    RingLinks& ring = links[p.ring];
    (p.right ? ring.right : ring.left) = link.value().get();
    ring.owned.push_back(std::move(link).value());
  }
  if (!failed.ok()) return failed;
  for (RingLinks& ring : links) {
    if (ring.owned.size() == 1) ring.left = ring.right = ring.owned.front().get();
  }
  return links;
}

Result<RingLinks> JoinRing(int rank, const std::vector<Endpoint>& workers, const PeerListener& mine,
                           Deadline deadline, const std::string& token, LinkTransport transport) {
  const int n = static_cast<int>(workers.size());
  if (rank < 0 || rank >= n) {
    return Status::Error("rank " + std::to_string(rank) + " is not in a ring of " +
                         std::to_string(n));
  }
  RingMembers all{.id = 0, .ranks = std::vector<int>(static_cast<std::size_t>(n))};
  for (int r = 0; r < n; ++r) all.ranks[static_cast<std::size_t>(r)] = r;
  Result<std::vector<RingLinks>> joined =
      JoinRings(rank, {all}, workers, mine, deadline, token, transport);
  if (!joined.ok()) return joined.status();
  return std::move(joined.value().front());
}

}  // namespace dtrain::dist
