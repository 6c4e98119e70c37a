// RingAllReduce: in-place sum (or mean) of a contiguous float range over the ranks of a ring, by
// reduce-scatter then all-gather (Patarasuk & Yuan; Baidu/Horovod's ring), over any Link.
//
//   RingAllReduce ring(rank, world, links.left, links.right, {.timeout = 30s});
//   Status s = ring.AllReduceMean(gradient, /*op=*/step);  // every rank passes the same op
//   // on failure: "all-reduce op 12 at rank 1 of 4: closed: rank 2 (10.0.0.3:7070) closed ..."
//
// The range is split into `world` contiguous chunks whose sizes differ by at most one float (some
// are empty when the range has fewer floats than ranks). In step s of the reduce-scatter, rank r
// sends chunk r-s to its right and adds chunk r-s-1 from its left into its own (indices mod
// world); after world-1 steps rank r holds the finished chunk r+1, which world-1 all-gather steps
// pass on verbatim.
// Every chunk is cut into segments of at most RingOptions::segment_floats (and, for small ranges,
// into at least four of 16 KiB or more), and each segment moves on as soon as it is ready, so the
// ring works as a pipeline.
//
// Full duplex: a sender thread owned by this object sends to the right while the calling thread
// receives from the left (the Link contract allows one of each at once, also when left == right).
// The caller posts each segment to the sender as soon as it is reduced; the two wait for each
// other through Doorbells, and with RingOptions::spin they spin briefly before sleeping (the
// caller on Link::Readable before a blocking receive).
//
// Bitwise identity: each float of the result is computed by exactly one rank (chunk c's finisher,
// rank c-1), always in the same order (ranks c, c+1, ..., c-1), scaled there for a mean, and then
// only copied. Every rank ends with the same bits.
//
// Deadlines and failures: each op must finish within RingOptions::timeout of its start; a dead,
// silent or misbehaving peer is an error naming that peer and the op. A rank whose op fails tells
// its right neighbour, in place of the next message, which rank caused the failure, so the ranks
// that are not neighbours of a dead rank fail promptly too, naming it. After a failure the ring
// refuses further ops (its links may be broken mid-message): build a new one.
//
// Thread safety: one op at a time, from one thread at a time. The links must outlive the ring and
// must not be used by anyone else while an op runs.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "core/dist/doorbell.h"
#include "core/dist/link.h"
#include "core/status.h"

namespace dtrain::dist {

struct RingOptions {
  // Each op's deadline, from its start. Bounds every wait for a peer.
  std::chrono::milliseconds timeout{30'000};
  // Pipelining unit: a chunk moves on in messages of at most this many floats (256 KiB).
  std::size_t segment_floats = 64 << 10;
  // How long a wait for a peer or for the other thread of this rank spins before it sleeps.
  // Spinning pays where each rank's two threads have cores of their own; on the 2-core hosts of
  // bench/README.md, with two ranks (four threads) per host, any spin made every size slower.
  std::chrono::microseconds spin{0};
};

// What the last op cost this rank.
struct RingOpStats {
  double wait_seconds = 0.0;  // from the op's start until the left neighbour's first segment came:
                              // mostly waiting for the slowest rank to reach the op
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
};

class RingAllReduce {
 public:
  // Op tags are below 2^31; the top bit marks a failure notice.
  static constexpr std::uint32_t kMaxOp = 0x7FFFFFFF;

  // Rank `rank` of `world` receives from `left` (rank-1) and sends to `right` (rank+1); they may
  // be the same link when world == 2 and are unused (may be null) when world == 1. Invalid
  // arguments make every op fail, saying why.
  RingAllReduce(int rank, int world, Link* left, Link* right, RingOptions options = {});
  ~RingAllReduce();
  RingAllReduce(const RingAllReduce&) = delete;
  RingAllReduce& operator=(const RingAllReduce&) = delete;

  // data = the sum of every rank's data, elementwise, bitwise identical on every rank. Every rank
  // passes the same size and the same op tag (distinct from the previous op's). On failure `data`
  // holds unspecified values.
  Status AllReduceSum(std::span<float> data, std::uint32_t op);
  // AllReduceSum, then * (1/world) (applied once, by the rank that finishes each chunk).
  Status AllReduceMean(std::span<float> data, std::uint32_t op);

  // The last op's costs (zero before the first, and when world == 1).
  const RingOpStats& last_op() const { return last_op_; }
  int rank() const { return rank_; }
  int world() const { return world_; }

 private:
  // Who saw a failure: the sender (on the right link), the receiving thread (on the left link),
  // or a notice from the left naming its cause.
  enum class Source { kSender, kReceiver, kNotice };
  struct Failure {
    Status status;
    int culprit;  // the rank that caused it
    Source source;
  };

  Status Run(std::span<float> data, std::uint32_t op, float scale);
  // The calling thread's side of an op: receive, reduce, post to the sender.
  void ReceiveAll(float scale);
  // Spins for options_.spin until the left link is readable or the op failed.
  void AwaitLeft();
  // Waits until the sender has sent message `message` of this op (it reads the memory that an
  // all-gather segment is about to be received into), or the op has failed; false if neither
  // happens within the op's deadline.
  bool AwaitSent(std::size_t message);
  void FailOnTag(std::uint32_t tag, std::span<const float> message);
  void SenderLoop();
  // The sender thread's side of an op.
  void SendAll();
  void SendNotice(std::size_t floats);
  // Records the op's first failure; a notice replaces what the sender saw (its consequence).
  void Fail(Status status, int culprit, Source source);
  // Waits until the sender has finished op `seq`; `abandoned`: the op failed and the sender was
  // told so.
  void WaitForSender(std::uint64_t seq, bool abandoned);

  // Chunk c's floats in the current op's range, and its segment k.
  std::size_t ChunkBegin(int c) const;
  std::size_t ChunkSize(int c) const;
  std::size_t Segments(int c) const;
  std::span<float> Segment(int c, std::size_t k) const;
  int Mod(int r) const { return ((r % world_) + world_) % world_; }

  const int rank_;
  const int world_;
  // Not owned: the caller keeps both alive while this ring exists (see the contract above).
  Link* const left_;
  Link* const right_;
  const RingOptions options_;
  Status unusable_;             // why no op can run (bad arguments, an earlier failure); OK if none
  RingOpStats last_op_;         // written by the calling thread only
  Clock::time_point op_start_{};
  std::vector<float> scratch_;  // one segment from the left, before it is added in

  // The current op: written by the calling thread before it bumps op_seq_, read by the sender
  // thread after it sees the bump, constant until the sender bumps done_seq_.
  std::span<float> data_;
  std::size_t segment_ = 0;  // floats per message of this op
  std::uint32_t op_ = 0;
  Deadline deadline_{};
  std::atomic<std::uint64_t> op_seq_{0};
  std::atomic<std::uint64_t> done_seq_{0};  // the last op the sender has finished
  std::vector<std::size_t> send_start_;     // index of the first message the sender sends in step s
  std::atomic<std::size_t> posted_{0};      // messages of this op ready to send
  std::atomic<std::size_t> sent_{0};        // messages of this op sent
  std::atomic<bool> abandon_{false};        // the caller failed: send a notice, not the rest
  std::atomic<bool> failed_{false};         // failure_ is set
  std::atomic<bool> shutdown_{false};
  std::mutex failure_mu_;
  std::optional<Failure> failure_;  // guarded by failure_mu_
  Doorbell sender_bell_;            // the sender waits on it
  Doorbell caller_bell_;            // the calling thread waits on it
  std::thread sender_;              // when world > 1
};

}  // namespace dtrain::dist
