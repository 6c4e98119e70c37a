#include "core/dist/loopback_ring.h"

#include <optional>
#include <thread>

namespace dtrain::dist {

Result<LoopbackRing> LoopbackRing::Listen(int world, LinkTransport transport) {
  if (world < 1)
    return Status::Error("a ring needs at least one rank, not " + std::to_string(world));
  LoopbackRing ring;
  ring.transport_ = transport;
  for (int r = 0; r < world; ++r) {
    Result<PeerListener> l = PeerListener::Open("127.0.0.1", /*backlog=*/4);
    if (!l.ok()) return l.status();
    ring.endpoints_.push_back({"127.0.0.1", l.value().port()});
    ring.listeners_.push_back(std::move(l).value());
  }
  return ring;
}

Result<RingLinks> LoopbackRing::Join(int rank, std::chrono::milliseconds timeout) const {
  if (rank < 0 || rank >= world()) {
    return Status::Error("rank " + std::to_string(rank) + " is not in a ring of " +
                         std::to_string(world()));
  }
  return JoinRing(rank, endpoints_, listeners_[static_cast<std::size_t>(rank)],
                  Clock::now() + timeout, "", transport_);
}

Result<std::vector<RingLinks>> LoopbackRing::ConnectAll(int world,
                                                        std::chrono::milliseconds timeout,
                                                        LinkTransport transport) {
  Result<LoopbackRing> ring = Listen(world, transport);
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
