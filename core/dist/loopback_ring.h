// LoopbackRing: connects the ranks of one ring over TCP on 127.0.0.1, for tests and benchmarks
// whose ranks are threads of one process or processes forked from it (the real rendezvous, through
// the coordinator, comes later). Listen makes one listening socket per rank before any rank
// starts, so every rank knows every port: a process forked afterwards inherits them.
//
//   Result<LoopbackRing> ring = LoopbackRing::Listen(4);
//   if (fork() == 0) { Result<RingLinks> mine = ring.value().Join(2, 10s); ... }
//
//   Result<std::vector<RingLinks>> all = LoopbackRing::ConnectAll(4, 10s);  // ranks as threads
//
// The connections are those of JoinRing (peer_links.h), over TCP unless the transport is kAuto
// (then shared memory: every rank is on this host). Join is one call per rank (any thread or process holding the ring);
// the object itself is one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "core/dist/link.h"
#include "core/dist/peer_links.h"
#include "core/status.h"

namespace dtrain::dist {

class LoopbackRing {
 public:
  static Result<LoopbackRing> Listen(int world, LinkTransport transport = LinkTransport::kTcp);
  // Joins every rank from its own thread of this process; element r belongs to rank r.
  static Result<std::vector<RingLinks>> ConnectAll(int world, std::chrono::milliseconds timeout,
                                                   LinkTransport transport = LinkTransport::kTcp);

  int world() const { return static_cast<int>(listeners_.size()); }
  // Rank `rank`'s links to its neighbours, connected within `timeout`.
  Result<RingLinks> Join(int rank, std::chrono::milliseconds timeout) const;

 private:
  LoopbackRing() = default;

  std::vector<PeerListener> listeners_;  // listeners_[r]: rank r's listening socket
  std::vector<Endpoint> endpoints_;
  LinkTransport transport_ = LinkTransport::kTcp;
};

}  // namespace dtrain::dist
