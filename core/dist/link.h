// Link: a reliable, ordered, bidirectional channel of float messages to ONE peer: the I/O seam of
// the collectives (Gloo's transport::Pair, LevelDB's Env). The same algorithm runs over an
// in-process pair in unit tests (local_link.h) and over TCP between processes (tcp_link.h).
//
//   Status s = link.Send(/*tag=*/op, gradient_chunk, deadline);
//   Status r = link.Recv(/*tag=*/op, scratch, deadline);
//   // "rank 2 (127.0.0.1:40123) sent a message tagged 8 where one tagged 7 was expected"
//
// Every message carries a tag (the operation's sequence number) and a length; a receive that meets
// another tag or length fails with an error naming both sides and the peer, never silent
// corruption. Every call takes a deadline; a dead or silent peer is an error naming it.
//
// Thread safety: full duplex. One thread may Send while another receives (Recv, RecvAnyTag,
// Readable) on the same link; two concurrent Sends, or two concurrent receives, are not allowed.
// Close may be called from any thread at any time. After a failed call the link may be unusable.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace dtrain::dist {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

class Link {
 public:
  virtual ~Link() = default;

  // Sends one message of data.size() floats (possibly none), tagged `tag`, by the deadline. May
  // return before the peer has received it (the message is then buffered by the transport).
  virtual Status Send(std::uint32_t tag, std::span<const float> data, Deadline deadline) = 0;

  // Receives the next message straight into `out` and returns its tag. A message of another
  // length is an error naming both lengths and the peer; on any failure `out` holds unspecified
  // values.
  virtual Result<std::uint32_t> RecvAnyTag(std::span<float> out, Deadline deadline) = 0;

  // RecvAnyTag that also requires the message's tag to be `tag` (TagMismatch otherwise).
  Status Recv(std::uint32_t tag, std::span<float> out, Deadline deadline);

  // A receive that lets the caller consume the message where the transport holds it, saving the
  // copy into `out` (ShmLink: straight out of shared memory). Once the tag is known,
  // accept(tag) says whether to fold: if so, fold(offset, floats) is called for consecutive
  // pieces that cover the message in order, `out` is left alone, and `folded` is true; if not,
  // or where the transport cannot (the default), the message lands in `out` as with RecvAnyTag.
  // Sizes and failures as RecvAnyTag; a failure may come after some pieces were folded.
  struct Received {
    std::uint32_t tag = 0;
    bool folded = false;
  };
  using FoldAccept = std::function<bool(std::uint32_t tag)>;
  using FoldPiece = std::function<void(std::size_t offset, std::span<const float> floats)>;
  virtual Result<Received> RecvFold(std::span<float> out, const FoldAccept& accept,
                                    const FoldPiece& fold, Deadline deadline);

  // Whether the messages this end sends carry a checksum of their floats, where the transport
  // has one (TcpLink: on by default; the receiver checks whatever the sender chose). Off saves a
  // pass over the bytes at each end: [cluster] checksum = false. Call before the link is used.
  virtual void SetSendChecksums(bool on) { (void)on; }

  // True when a receive would start without blocking: a message, the first bytes of one, or the
  // peer's close has arrived. Never blocks; lets a caller spin briefly before a blocking receive.
  virtual bool Readable() = 0;

  // Ends the link in both directions now: blocked and later calls at this end fail promptly, and
  // the peer's fail once it has received what was sent before.
  virtual void Close() = 0;

  // What carries the messages, for people: "tcp", "tcp without checksums", "shared memory".
  virtual std::string_view Transport() const { return "in-process"; }

  // How errors name the other end, e.g. "rank 2 (127.0.0.1:40123)".
  virtual const std::string& peer() const = 0;

  // The error for a message tagged `got` where one tagged `want` was expected.
  Status TagMismatch(std::uint32_t want, std::uint32_t got) const;
};

// One rank's two ring neighbours. With two ranks, one link serves both sides (left == right).
struct RingLinks {
  Link* left = nullptr;   // rank - 1 (mod world), whose messages this rank receives
  Link* right = nullptr;  // rank + 1 (mod world), to which this rank sends
  std::vector<std::unique_ptr<Link>> owned;  // what left and right point into
};

// The links `owned` holds, in its order, for the APIs that take Link* (shards, servers).
std::vector<Link*> LinkPointers(const std::vector<std::unique_ptr<Link>>& owned);

// Milliseconds left until `deadline`, rounded up, never negative.
std::chrono::milliseconds Remaining(Deadline deadline);

}  // namespace dtrain::dist
