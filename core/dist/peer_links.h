// Making the data-plane connections of a job's processes once the rendezvous has told each one
// where the others listen: a ring's neighbour links, or links between workers and shards.
//
//   Result<PeerListener> mine = PeerListener::Open("127.0.0.1");   // its port goes to the
//                                                                   // coordinator
//   Result<RingLinks> ring = JoinRing(rank, endpoints, mine.value(), deadline);
//   Result<std::unique_ptr<Link>> shard = ConnectLink(endpoints[n + s], rank, n + s,
//                                                     "shard " + std::to_string(s), deadline,
//                                                     token, LinkTransport::kAuto);
//
// Every connection starts with the connecting process introducing itself: a heartbeat frame whose
// sender is its id (its rank in the job) and whose payload is the attempt's data-plane token (the
// coordinator draws it at random for each attempt and hands it out at the rendezvous).
// The introduction may be followed by the shared-memory upgrade (shm_link.h, MakeLink).
// A listener that requires a token closes, before reading anything else, every connection whose
// introduction does not carry it, is not a heartbeat, is larger than a token, or does not come
// within kIntroductionTimeout — and goes on waiting for the right peers. Introductions are awaited
// side by side: a connection that stays silent (anyone on the host can open one) holds up no
// other, and at most kMaxPendingIntroductions wait at once (a new one then closes the oldest),
// so its descriptors are bounded too. The accepting side then checks who it expected. Ids are the
// job's process indices: worker ranks 0..N-1, then shards N..N+S-1; a connection of a ring that
// JoinRings joins under ring id k > 0 introduces its rank as (k << kRingIdShift) | rank, so that
// several rings can be joined over one listener at once. PeerListener is one thread at a
// time for Accept; the free functions are safe for concurrent use.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dist/link.h"
#include "core/dist/shm_link.h"
#include "core/dist/tcp_link.h"
#include "core/net/frame_stream.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace dtrain::dist {

struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
};

// A connection accepted from a peer that introduced itself as `id`.
struct IntroducedPeer {
  std::uint32_t id = 0;
  net::FrameStream stream;
};

inline constexpr std::chrono::seconds kIntroductionTimeout{5};
inline constexpr std::size_t kMaxPendingIntroductions = 64;

class PeerListener {
 public:
  // Listens on `host` (an IPv4 address) at `port`, or at a port the kernel picks (0).
  static Result<PeerListener> Open(const std::string& host, int backlog = 64,
                                   std::uint16_t port = 0);

  // From now on only connections introduced with `token` are accepted (empty: any).
  void RequireToken(std::string token) { token_ = std::move(token); }
  // Connections closed so far for a missing, late or wrong introduction.
  std::uint64_t refused() const { return refused_; }

  PeerListener(PeerListener&& other) noexcept = default;
  PeerListener& operator=(PeerListener&& other) noexcept = default;
  PeerListener(const PeerListener&) = delete;
  PeerListener& operator=(const PeerListener&) = delete;

  std::uint16_t port() const { return port_; }
  // The next connection whose introduction is complete, by the deadline. Connections still
  // introducing themselves when it returns wait on for the next call.
  Result<IntroducedPeer> Accept(Deadline deadline) const;

 private:
  // An accepted connection whose introduction has not all arrived: the bytes read so far (never
  // more than its one frame, so the stream goes on exactly after it).
  struct Pending {
    UniqueFd fd;
    Clock::time_point until;  // closed then
    std::vector<std::uint8_t> arrived;
  };

  PeerListener(int fd, std::uint16_t port) : fd_(fd), port_(port) {}
  // Reads what has arrived of `p`'s introduction without waiting: nothing while it is
  // incomplete; else the peer, or why it is refused (its descriptor then closed).
  std::optional<Result<IntroducedPeer>> ReadIntroduction(Pending& p) const;

  UniqueFd fd_;
  std::uint16_t port_ = 0;
  std::string token_;
  mutable std::uint64_t refused_ = 0;
  mutable std::vector<Pending> pending_;  // oldest first
};

// Accepts one connection on `listener` that must come from `expected_id`.
Result<std::unique_ptr<TcpLink>> AcceptPeer(const PeerListener& listener, int self_id,
                                            int expected_id, const std::string& peer_label,
                                            Deadline deadline);

// What carries a job's links: kAuto, shared memory between processes of one host (ShmLink,
// after the upgrade handshake of core/net/protocol.md) and TCP otherwise; kTcp, always TCP (no
// handshake). Both ends of a connection must use the same.
enum class LinkTransport { kAuto, kTcp };

// The link over an introduced connection (ConnectIntroduced's, or a PeerListener's stream): by
// `transport`; `role` kCreator at the end that connected, kOpener at the one that accepted.
// Errors name the other end "<peer_label> (address)", by default "rank <peer_id>".
Result<std::unique_ptr<Link>> MakeLink(net::FrameStream stream, LinkTransport transport,
                                       ShmRole role, int self_id, int peer_id,
                                       const std::string& peer_label, Deadline deadline);

// Connects to `to`, introduces this process as `self_id` with `token`, then MakeLink as the
// connecting end: shared memory when `to` runs on this host and `transport` is kAuto.
Result<std::unique_ptr<Link>> ConnectLink(const Endpoint& to, int self_id, int peer_id,
                                          const std::string& peer_label, Deadline deadline,
                                          const std::string& token, LinkTransport transport);

// TCP_CONGESTION of every ring connection, whatever the host's default: a loss-based algorithm
// that does not pace. BBR, a common default on cloud images, paces each connection with a kernel
// timer when the qdisc is not fq; for an all-reduce's back-to-back bursts that meant about 150
// timer interrupts per 4 MiB op at n=4, and ops up to 40 % slower than with reno (cubic: between
// the two; bench/README.md). On a lab network, with round trips of microseconds, reno and cubic
// behave alike, and reno is the one every process may choose. Links between workers and shards
// keep the host's algorithm: the parameter-server bench measured BBR fastest there.
inline constexpr std::string_view kRingCongestionControl = "reno";

// Rank `rank`'s ring links among the workers at `workers` (rank r listens at workers[r]): it
// connects to rank + 1 and accepts rank - 1 on `mine` (two ranks share one connection, made by
// rank 0), and sets kRingCongestionControl on each connection (best effort: the kernel refuses an
// algorithm that net.ipv4.tcp_allowed_congestion_control does not list for a process without
// CAP_NET_ADMIN; reno is always allowed). With kAuto, the connecting end of each connection
// creates the shared-memory segment.
Result<RingLinks> JoinRing(int rank, const std::vector<Endpoint>& workers, const PeerListener& mine,
                           Deadline deadline, const std::string& token = "",
                           LinkTransport transport = LinkTransport::kAuto);

inline constexpr int kRingIdShift = 16;

// One of the rings a process joins with JoinRings: its members' job ranks in ring order, and an
// id (below 2^16) that no other ring joined over the same listeners at the same time has; ring
// id 0 is JoinRing's (introductions carry the bare rank). With an id above 0, ranks stay below
// 2^16.
struct RingMembers {
  std::uint32_t id = 0;
  std::vector<int> ranks;
};

// Rank `rank`'s links on each of `rings` (element k: rings[k]'s; empty for a ring of one), as
// JoinRing makes them, over the one listener `mine`: rank r listens at endpoints[r]. Every ring
// connects to its right before this process accepts any left, and the connections coming in are
// told apart by their introductions, so members may join the rings in any order. Links name their
// peers by job rank.
Result<std::vector<RingLinks>> JoinRings(int rank, const std::vector<RingMembers>& rings,
                                         const std::vector<Endpoint>& endpoints,
                                         const PeerListener& mine, Deadline deadline,
                                         const std::string& token = "",
                                         LinkTransport transport = LinkTransport::kAuto);

}  // namespace dtrain::dist
