// ShmLink: a Link between two processes on the same host through a shared-memory segment, beside
// the TCP connection they were introduced over (peer_links.h), which stays open as the liveness
// channel: a peer that dies, even by SIGKILL, closes it, and a waiting call here notices.
//
//   // after the introduction, on a connection between two processes of one host:
//   Result<std::unique_ptr<Link>> link = NegotiateLink(std::move(stream), ShmRole::kCreator,
//                                                      /*self_rank=*/0, /*peer_rank=*/1, "",
//                                                      deadline);
//   // a ShmLink when both ends share a kernel, network and IPC namespace, a TcpLink otherwise
//
// The segment holds one single-producer/single-consumer byte ring per direction (4 MiB each by
// default). A message is a 16-byte header (a marker, its tag, its length in bytes) and its floats;
// a message larger than the ring streams through it in pieces, copied straight from the sender's
// span into the ring and from the ring into the receiver's span: one copy, no system call while
// both sides keep up. A waiting side first polls (sched_yield between looks, for up to
// ShmOptions::poll), then sleeps on a futex word in the segment, in slices of at most
// ShmOptions::liveness_slice between which it looks at the TCP connection; the other side makes
// the futex system call only when the waiter said it sleeps. RecvFold hands the receiver the floats
// where they lie in the ring (the ring all-reduce adds them into its own values from there), so a
// reduced message is copied once, by its sender. The set-up and the segment's layout
// are written down in core/net/protocol.md ("Shared-memory links").
//
// Errors read like TcpLink's ("timeout: no message within 200 ms from rank 1 (127.0.0.1:4242)",
// "closed: rank 1 (127.0.0.1:4242) closed the connection", "unexpected frame: expected a message
// of 36 bytes (9 floats) ..."), and the peer is named the same way. A receive that timed out
// before a message began may be retried; any other failure leaves that direction unusable.
// Thread safety: the Link contract (one sender and one receiver at a time; Close from any thread).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "core/dist/link.h"
#include "core/net/frame_stream.h"
#include "core/status.h"

namespace dtrain::dist {

struct ShmOptions {
  // Bytes of each direction's ring: a power of two, at least 4 KiB.
  std::size_t ring_bytes = std::size_t{4} << 20;
  // How long a wait polls (yielding the core between looks) before it sleeps.
  std::chrono::microseconds poll{200};
  // The longest futex sleep between two looks at the TCP connection: how late a dead peer is
  // noticed at most.
  std::chrono::milliseconds liveness_slice{5};
};

// Which end of the TCP connection this is: the one that connected (and introduced itself)
// creates the segment; the one that accepted opens it.
enum class ShmRole { kCreator, kOpener };

namespace internal {
struct ShmSegment;
struct ShmRing;
}  // namespace internal

class ShmLink final : public Link {
 public:
  // Sets up the segment with the peer over `stream` (connected and introduced; both ends call
  // this, with opposite roles) and keeps the stream as the liveness channel. Fails, naming the
  // peer, when the segment cannot be made or opened at either end. Errors name the peer
  // "<peer_label> (address)", by default "rank <peer_rank>".
  static Result<std::unique_ptr<ShmLink>> Create(net::FrameStream stream, ShmRole role,
                                                 int self_rank, int peer_rank,
                                                 std::string peer_label, Deadline deadline,
                                                 const ShmOptions& options = {});
  ~ShmLink() override;
  ShmLink(const ShmLink&) = delete;
  ShmLink& operator=(const ShmLink&) = delete;

  Status Send(std::uint32_t tag, std::span<const float> data, Deadline deadline) override;
  Result<std::uint32_t> RecvAnyTag(std::span<float> out, Deadline deadline) override;
  // Folds straight out of the ring: the only copy of the message is the sender's into the ring.
  Result<Received> RecvFold(std::span<float> out, const FoldAccept& accept, const FoldPiece& fold,
                            Deadline deadline) override;
  bool Readable() override;
  // Marks this end closed in the segment, wakes every sleeper of either end and shuts the TCP
  // connection down.
  void Close() override;
  std::string_view Transport() const override { return "shared memory"; }
  const std::string& peer() const override { return peer_; }

 private:
  friend Result<std::unique_ptr<Link>> NegotiateLink(net::FrameStream stream, ShmRole role,
                                                     int self_rank, int peer_rank,
                                                     const std::string& peer_label,
                                                     Deadline deadline, const ShmOptions& options);
  enum class WaitEnd { kReady, kClosedHere, kPeerGone, kTimeout };

  ShmLink(net::FrameStream stream, void* map, std::size_t map_bytes, ShmRole role,
          std::string peer, const ShmOptions& options);
  // Waits until ready() holds, this end or the peer closes, or the deadline passes; sleeps on
  // `seq` after announcing it in `sleeping`.
  template <typename Ready>
  WaitEnd Wait(const Ready& ready, std::atomic<std::uint32_t>& seq,
               std::atomic<std::uint32_t>& sleeping, Deadline deadline);
  // True when the TCP connection says the peer is gone (hang-up, error).
  bool PeerGone() const;
  // RecvAnyTag, and RecvFold when `accept` and `fold` are given.
  Result<Received> Receive(std::span<float> out, const FoldAccept* accept, const FoldPiece* fold,
                           Deadline deadline);

  net::FrameStream stream_;  // the liveness channel; nothing is read or written after set-up
  const int socket_;
  void* const map_;
  const std::size_t map_bytes_;
  internal::ShmSegment* const segment_;
  internal::ShmRing* const out_;  // this end produces
  internal::ShmRing* const in_;   // this end consumes
  std::uint8_t* const out_data_;
  std::uint8_t* const in_data_;
  const std::size_t capacity_;
  const std::size_t piece_;  // bytes moved between two publications of a position
  std::atomic<std::uint32_t>& closed_here_;  // in the segment
  std::atomic<std::uint32_t>& closed_there_;
  const ShmOptions options_;
  const std::string peer_;
  std::atomic<bool> closed_{false};
  // Sending thread only.
  std::uint64_t out_head_ = 0;
  std::optional<Status> send_broken_;
  // Receiving thread only.
  std::uint64_t in_tail_ = 0;
  std::optional<Status> recv_broken_;
  Clock::time_point next_liveness_look_{};
};

// After the introduction on `stream`: exchanges host identities with the peer (same_host.h) and,
// when both run on one host, sets up a ShmLink; otherwise, or when the segment cannot be made at
// either end, returns a TcpLink over the same connection. Both ends must call it (with opposite
// roles) — or both TcpLink::Create: it adds frames to the connection's start.
Result<std::unique_ptr<Link>> NegotiateLink(net::FrameStream stream, ShmRole role, int self_rank,
                                            int peer_rank, const std::string& peer_label,
                                            Deadline deadline, const ShmOptions& options = {});

}  // namespace dtrain::dist
