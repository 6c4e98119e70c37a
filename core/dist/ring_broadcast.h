// RingBroadcast: one ring member's byte blob to every other member, over the ring's links, between
// collective ops (an elastic job's regroup: the leader's state to the new membership).
//
//   Result<std::string> state = RingBroadcast(position, world, links, leader, blob, tag, deadline);
//
// The root sends to its right; every other member receives from its left and passes each message
// on to its right unless the right is the root, so the blob goes once around the ring, pipelined
// in segments. The first message carries the blob's length (the receivers' blobs are ignored); the
// bytes travel as the floats' bit patterns, copied, never computed on. Every member gets the
// root's blob, or an error naming the link that failed; a member that fails closes its link to the
// right, so the failure goes around the ring instead of leaving the others to their deadline. One
// thread per member; the links must not be used by anyone else meanwhile.
#pragma once

#include <cstdint>
#include <string>

#include "core/dist/link.h"
#include "core/status.h"

namespace dtrain::dist {

// Member `position` of a ring of `world` (0 <= root, position < world): the blob of member `root`
// (`blob` itself at the root). Every member passes the same root, tag and a deadline.
Result<std::string> RingBroadcast(int position, int world, const RingLinks& links, int root,
                                  std::string blob, std::uint32_t tag, Deadline deadline);

}  // namespace dtrain::dist
