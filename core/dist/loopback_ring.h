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
// Rank r connects to rank r+1 and accepts rank r-1 (two ranks share one connection); the
// connecting side introduces itself with a heartbeat frame whose sender is its rank, which the
// accepting side checks. Join is one call per rank (any thread or process holding the ring);
// the object itself is one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "core/dist/link.h"
#include "core/status.h"

namespace dtrain::dist {

class LoopbackRing {
 public:
  static Result<LoopbackRing> Listen(int world);
  // Joins every rank from its own thread of this process; element r belongs to rank r.
  static Result<std::vector<RingLinks>> ConnectAll(int world, std::chrono::milliseconds timeout);

  LoopbackRing(LoopbackRing&& other) noexcept;
  LoopbackRing& operator=(LoopbackRing&& other) noexcept;
  LoopbackRing(const LoopbackRing&) = delete;
  LoopbackRing& operator=(const LoopbackRing&) = delete;
  ~LoopbackRing();  // closes this process's listening sockets

  int world() const { return static_cast<int>(listeners_.size()); }
  // Rank `rank`'s links to its neighbours, connected within `timeout`.
  Result<RingLinks> Join(int rank, std::chrono::milliseconds timeout) const;

 private:
  LoopbackRing(std::vector<int> listeners, std::vector<std::uint16_t> ports);
  void CloseListeners();

  std::vector<int> listeners_;  // listeners_[r]: rank r's listening socket
  std::vector<std::uint16_t> ports_;
};

}  // namespace dtrain::dist
