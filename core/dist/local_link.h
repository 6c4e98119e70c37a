// In-process links: two ends of one channel, for running ranks as threads in unit tests. Each
// direction is a queue bounded like a socket buffer, so a sender blocks while its peer does not
// receive, exactly as over TCP, and an algorithm that would deadlock over sockets deadlocks here
// too (until its deadline).
//
//   LocalLinkPair p = MakeLocalLinkPair("rank 0 (in-process)", "rank 1 (in-process)");
//   std::thread t([&] { p.b->Send(7, values, deadline); });
//   Status s = p.a->Recv(7, out, deadline);        // p.a->peer() == "rank 1 (in-process)"
//
//   std::vector<RingLinks> ring = MakeLocalRing(4);  // ring[r].left / ring[r].right
//
// A message larger than the capacity is accepted once the queue is empty. After either end
// closes, the other still receives what was sent before, then fails "closed". Each end follows
// the Link contract (one sender and one receiver at a time, Close from anywhere); the two ends
// may be used from different threads and destroyed in any order.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/dist/link.h"

namespace dtrain::dist {

// Bytes a direction holds before Send blocks: a typical loopback socket buffer.
inline constexpr std::size_t kLocalLinkCapacity = 256 << 10;

struct LocalLinkPair {
  std::unique_ptr<Link> a;  // a->peer() == name_b
  std::unique_ptr<Link> b;  // b->peer() == name_a
};

// `name_a` and `name_b` are how each end is named by the other's errors.
LocalLinkPair MakeLocalLinkPair(std::string name_a, std::string name_b,
                                std::size_t capacity_bytes = kLocalLinkCapacity);

// The links of `world` ranks in a ring, ranks named "rank R (in-process)"; element r belongs to
// rank r. Two ranks share one pair (left == right); one rank gets no links.
std::vector<RingLinks> MakeLocalRing(int world, std::size_t capacity_bytes = kLocalLinkCapacity);

}  // namespace dtrain::dist
