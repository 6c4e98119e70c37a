// RingAllReduce: in-place sum (or mean) of a contiguous float range over the ranks of a ring, over
// any Link: with two ranks by one direct exchange, with more by reduce-scatter then all-gather
// (Patarasuk & Yuan; Baidu/Horovod's ring).
//
//   RingAllReduce ring(rank, world, links.left, links.right, {.timeout = 30s});
//   Status s = ring.AllReduceMean(gradient, /*op=*/step);  // every rank passes the same op
//   // on failure: "all-reduce op 12 at rank 1 of 4: closed: rank 2 (10.0.0.3:7070) closed ..."
//
// Two ranks (world == 2, unless RingOptions::direct_exchange is off): each rank sends its whole
// range to the other and adds the other's into its own as it arrives: the same bytes on the wire
// as a two-rank ring, in one phase instead of two, with nothing to forward.
// More ranks: the range is split into `world` contiguous chunks whose sizes differ by at most one
// float (some are empty when the range has fewer floats than ranks). In step s of the
// reduce-scatter, rank r sends chunk r-s to its right and adds chunk r-s-1 from its left into its
// own (indices mod world); after world-1 steps rank r holds the finished chunk r+1, which world-1
// all-gather steps pass on verbatim.
// Small ranges, more than two ranks (where a rank sends at most RingOptions::gather_sum_bytes,
// 96 KiB, this way: ranges up to 32 KiB at 4 ranks, fewer the more ranks there are): a message's
// fixed costs outweigh its bytes, so the ring's 2(world-1) dependent steps cost more than fewer
// steps of more bytes. Every rank's whole range is gathered to every rank both ways round the
// ring at once (each link is full duplex): rank r sends its range to its right and to its left,
// and passes on what comes from the left to the right and what comes from the right to the left,
// so that in hop t it receives rank r-1-t's range from its left and rank r+1+t's from its right,
// for floor(world/2) hops rightward and (world-1)/2 leftward: ceil((world-1)/2) dependent hops
// (2 at 4 ranks, where the ring's all-gather alone takes 3), the same (world-1) ranges received.
// Every rank then sums chunk c from the gathered ranges in the ring's own order
// (SumInRingOrder): the bits the ring would give. On 2 cores with 4 ranks over loopback TCP this
// measured faster than the ring, and than gathering one way round, up to 32 KiB, and slower than
// both from 64 KiB (docs/performance-notes.md). AllGather goes both ways for blocks as small, one
// way round (world-1 hops) for larger ones.
// Middle ranges, three or four ranks (RingOptions::scatter_most_ranks; ranges that do not gather,
// where a rank sends at most RingOptions::scatter_sum_bytes, 112 KiB, this way: up to 64 KiB at 4
// ranks): the two halves of the ring's op each go both ways round it. First every rank r gathers,
// for chunk r alone, every other rank's values of that chunk: rank r sends its values of chunks
// r+1, ..., r+R to its right (R = ceil((world-1)/2)) and of chunks r-1, ..., r-L to its left (L =
// floor((world-1)/2)), and passes on what comes from one side for chunks beyond it to the other, so
// that in hop t it receives rank r-1-t's values from its left and rank r+1+t's from its right: R
// dependent hops. It sums chunk r in the ring's order (SumChunkInRingOrder), and then the finished
// chunks are gathered both ways (R hops). At 4 ranks that is 4 dependent steps instead of the
// ring's 6, for 7/6 of its bytes and one message more; on 2 cores over loopback TCP it
// measured 1.03-1.13x the ring from 40 to 80 KiB, and slower from 128 KiB
// (docs/performance-notes.md).
//
// Whichever way, the messages are segments of at most RingOptions::segment_floats (and, for small
// ranges, at least four per chunk, of 64 KiB or more), and each moves on as soon as it is ready,
// so the ring works as a pipeline. The messages depend only on the world, the rank and the range's
// size.
//
// Driving an op. By default (RingOptions::caller_sends; with more than two ranks only for ranges up
// to 8 MiB, above which 4 ranks on 2 cores measured faster threaded) the calling thread does
// everything: it sends up to 512 KiB (two ranks) or 1 MiB (rings) ahead of what it has received,
// then receives, reduces and forwards, with no hand-off between threads as long as the transport
// buffers what it sends (the usual case: loopback buffers megabytes). A thread owned by this object
// watches meanwhile: when the calling thread has been asleep in one send for 4 ms (a peer that does
// not read, maybe because its own send is blocked too), it receives in its place until the send
// moves, so two ranks cannot deadlock; the next 16 ops (doubling while rescues recur) are then
// threaded. A threaded op (caller_sends off, large rings, after a rescue) has that thread send
// while the calling thread receives, full duplex from the start (the Link contract allows one of
// each at once, also when left == right): the caller posts each segment to forward as soon as it is
// reduced, and the two wait for each other through Doorbells. The messages, their order and their
// contents are the same either way, so ranks may differ in how they drive an op. A gather's
// messages go both ways, each to or from the link its plan names, but still one at a time in one
// order: hop by hop, the rightward message before the leftward one, both for sends and for
// receives. So the first message of all not yet through has its sender at it (it sent everything
// before, and what it passes on came earlier) and its receiver too (or that rank's sender thread,
// rescuing a stuck send): no rank waits for one that waits for it, however little a link buffers.
// Every wait for a peer or for the other thread first polls for up to RingOptions::yield, yielding
// the core between looks, then spins for up to RingOptions::spin, then sleeps.
//
// A segment to reduce is added into this rank's values as the link reads it (Link::RecvFold) when
// this rank has already sent its own values of that segment: over shared memory (ShmLink) the
// sum is taken straight out of the ring, with no copy into a scratch buffer; other links, and
// segments that came before this rank sent its own, go through the scratch. The additions are
// the same either way.
//
// Bitwise identity: with two ranks, rank 0 computes a+b and rank 1 b+a (then * 1/2 for a mean),
// which IEEE addition makes the same bits. With more, each float of the result is computed by
// exactly one rank (chunk c's finisher, rank c-1), always in the same order (ranks c, c+1, ...,
// c-1), scaled there for a mean, and then only copied (a middle range's chunk c by rank c, in that
// order); a small range's sums are computed by every rank, each in that same order from the same
// values. Every rank ends with the same bits, and which of the ways ran does not change them.
//
// Deadlines and failures: each op must finish within RingOptions::timeout of its start; a dead,
// silent or misbehaving peer is an error naming that peer and the op. A rank whose op fails tells
// each neighbour it still owes a message (its right one in the ring, both in a gather), in place of
// the next message, which rank caused the failure, so the ranks that are not neighbours of a dead
// rank fail promptly too, naming it; not over the link whose send failed. After a failure the ring
// refuses further ops (its links may be broken mid-message): build a new one.
//
// Thread safety: one op at a time, from one thread at a time. The links must outlive the ring and
// must not be used by anyone else while an op runs.
#pragma once

#include <sys/types.h>

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
#include "core/dist/mean_collective.h"
#include "core/status.h"

namespace dtrain::dist {

struct RingOptions {
  // Each op's deadline, from its start. Bounds every wait for a peer.
  std::chrono::milliseconds timeout{30'000};
  // Pipelining unit: a chunk moves on in messages of at most this many floats (256 KiB).
  std::size_t segment_floats = 64 << 10;
  // How long a wait for a peer or for the other thread of this rank spins (pause, no yield) after
  // `yield` before it sleeps. Pure spinning pays only where each thread has a core of its own; on
  // the 2-core hosts of bench/README.md it made every size slower.
  std::chrono::microseconds spin{0};
  // With two ranks, one direct exchange instead of the two-phase ring (the same result, bit for
  // bit); off: the ring, e.g. to compare the two.
  bool direct_exchange = true;
  // The calling thread sends as well as receives (see "Driving an op" above); off: the sender
  // thread sends from the start of every op.
  bool caller_sends = true;
  // How long a wait for a peer or for the other thread of this rank polls, giving its core to any
  // other runnable thread between looks (sched_yield), before it spins or sleeps. Waking a
  // sleeping thread costs tens of microseconds on virtual hosts (docs/performance-notes.md).
  std::chrono::microseconds yield{1000};
  // Rings of more than two ranks gather every rank's whole range and sum it in the ring's order
  // (see "Small ranges" above) where what a rank sends that way, (world - 1) times the range's
  // bytes, is at most this many: ranges up to 32 KiB at 4 ranks, as measured; the gather's bytes
  // grow with the world and the ring's do not, so larger rings gather smaller ranges only. 0: the
  // ring for every size.
  std::size_t gather_sum_bytes = 96 << 10;
  // Rings of three or four ranks all-reduce ranges that do not gather both ways round the ring by
  // chunks (see "Middle ranges" above) where what a rank sends that way, ScatterChunksSent(world)
  // of its largest chunks, is at most this many: ranges up to 64 KiB at 4 ranks (7/4 of the
  // range), as measured; the bytes grow with the world faster than the ring's, so larger rings
  // would take smaller ranges this way. 0: the ring for them.
  std::size_t scatter_sum_bytes = 112 << 10;
  // ... in rings of at most this many ranks: there it sends at most 7/6 of the ring's bytes; at 5
  // to 8 ranks it would send 1.25-1.64 times them, for hops that 2 cores cannot time.
  int scatter_most_ranks = 4;
};

class RingAllReduce final : public MeanCollective {
 public:
  // Op tags are below 2^31; the top bit marks a failure notice.
  static constexpr std::uint32_t kMaxOp = 0x7FFFFFFF;

  // Rank `rank` of `world` has the links to `left` (rank-1) and `right` (rank+1): the ring receives
  // from the left and sends to the right, a gather of more than two ranks goes both ways. They may
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
  // AllReduceSum, then * (1/world), applied once to each sum before it is copied anywhere.
  Status AllReduceMean(std::span<float> data, std::uint32_t op) override;
  // data holds world blocks of data.size() / world floats (a multiple of world), this rank's own
  // at block rank; afterwards block r is rank r's, on every rank. Each rank's block goes both ways
  // round the ring where an all-reduce of its size would gather (see "Small ranges" above), else
  // (and with two ranks) one way: each rank sends (world - 1) blocks and receives as many, in
  // segments, pipelined and driven as an all-reduce is.
  Status AllGather(std::span<float> data, std::uint32_t op);

  // Every later op fails, saying this rank left the ring (an elastic replica told to regroup:
  // runner::TrainingSession::LeaveRing). Closing a rank's links fails its neighbours' ops and its
  // own; a ring of one has no links, and this is what fails its next op.
  void Leave();

  // The last op's costs (zero before the first, and when world == 1).
  const RingOpStats& last_op() const { return last_op_; }
  RingOpStats LastCost() const override { return last_op_; }
  // The bytes this rank sends in an all-reduce of `floats` floats (by whichever way the op goes).
  std::uint64_t BytesSent(std::size_t floats) const override;
  // Whether a ring of `world` ranks with `options` all-reduces a range of `bytes` by gathering
  // every rank's range and summing it (see "Small ranges" above).
  static bool GathersToSum(int world, std::size_t bytes, const RingOptions& options);
  // Whether it all-reduces a range of `bytes` both ways round the ring by chunks (see "Middle
  // ranges"), and how many chunks a rank sends then: R(R+3)/2 + L(L+3)/2.
  static bool ScattersToSum(int world, std::size_t bytes, const RingOptions& options);
  static std::size_t ScatterChunksSent(int world);
  int rank() const { return rank_; }
  int world() const override { return world_; }
  // Whether the calling thread may send in the next op: RingOptions::caller_sends, unless a recent
  // op's send needed rescuing (rings of more than two ranks also need a range of 8 MiB or less).
  bool caller_sends() const { return options_.caller_sends && threaded_left_ == 0; }

 private:
  // Who saw a failure: a sending thread, a receiving thread, or a neighbour's notice naming its
  // cause.
  enum class Source { kSender, kReceiver, kNotice };
  struct Failure {
    Status status;
    int culprit;  // the rank that caused it
    Source source;
  };
  // One message the current op sends, in order, and the link it goes over.
  struct Outgoing {
    std::span<const float> values;
    Link* to;
  };
  // One message the current op receives, in order, where from, and what becomes of it.
  struct Incoming {
    std::span<float> values;  // the floats of the op's range it is for
    Link* from;
    bool reduce;              // received beside `values` and added in (else received into them)
    float scale;              // the factor of that sum: 1/world where it finishes a mean, else 1
    std::size_t after_sent;   // `values` may be written once this many messages have been sent
    bool forward;             // the message is sent on afterwards: post one more
  };
  // Who may receive from the left link now (one receiver at a time, as the Link contract says).
  enum Receiver : int { kNobody, kCaller, kRescuer };

  // Whether an all-reduce of `bytes` goes by gathering every rank's range and summing here.
  bool GathersToSum(std::size_t bytes) const { return GathersToSum(world_, bytes, options_); }
  bool ScattersToSum(std::size_t bytes) const { return ScattersToSum(world_, bytes, options_); }
  // What an op computes: a sum scaled by `scale` (by the ring or the exchange), the gather of
  // every rank's block (both ways where it is small), the same both ways whatever its size, or
  // every rank's values of this rank's chunk gathered into gathered_ (ScatterSlot).
  enum class Collective { kReduce, kGather, kGatherBothWays, kScatter };
  // AllReduceSum / AllReduceMean: by the ring, or for small ranges by gathering and summing here,
  // or for middle ones by gathering each chunk to one rank and the sums to all.
  Status Reduce(std::span<float> data, std::uint32_t op, float scale);
  Status ReduceBothWays(std::span<float> data, std::uint32_t op, float scale);
  Status Run(std::span<float> data, std::uint32_t op, Collective collective, float scale);
  // Fill sends_, receives_, posted_ and the op's byte counts for the current op's range.
  void PlanRing(float scale);
  void PlanExchange(float scale);
  void PlanGather(bool both_ways);
  void PlanScatter();
  // For a gather or a scatter: `values` sent to `to` verbatim, and `into` received from `from`
  // in place (passed on afterwards where `forward`), in messages of `segment` floats.
  void PlanCopies(std::span<float> values, Link* to, std::size_t segment);
  void PlanArrivals(std::span<float> into, Link* from, bool forward, std::size_t segment);
  // Where a scatter keeps rank `origin`'s values of chunk c: a slot of Chunk(0).size() floats.
  std::span<float> ScatterSlot(int origin, int c);

  // The calling thread drives the whole op (caller_sends).
  void Drive();
  // After this rank's send failed: receive what is left, for up to kNoticeGrace, in case a
  // neighbour's notice names the failure's cause.
  void AwaitNotice();
  // Receives messages `from` on, aside, until a notice comes or `cause_by` (the op has failed at
  // a send, maybe one to a peer that gave up over an earlier failure elsewhere); a link whose
  // receive failed is skipped from then on.
  void ReceiveCauses(std::size_t from, Deadline cause_by, Doorbell& bell);
  // The calling thread's side of a threaded op: receive, reduce, post to the sender.
  void ReceiveAll();
  // Receives message n of the op and does with it what the plan says (nothing once `cause_by` is
  // set: the op has failed and only a notice matters). False when the op failed here. `bell` is
  // what this thread waits on for sends.
  bool ReceiveMessage(std::size_t n, const std::optional<Deadline>& cause_by, Doorbell& bell);
  // Polls, then spins, for up to options_.yield and options_.spin, until `link` is readable or the
  // op failed.
  void AwaitReadable(Link& link);
  // Waits on `bell` until `count` messages of this op have been sent (the memory a message is
  // about to change may still be read by one of them), or the op has failed; false if neither
  // happens within the op's deadline.
  bool AwaitSent(std::size_t count, Doorbell& bell);
  // Yields, spins, then sleeps on `bell` until ready() or `deadline`.
  template <typename Ready>
  bool WaitOn(Doorbell& bell, Ready ready, Deadline deadline);
  void FailOnTag(std::uint32_t tag, std::span<const float> message, const Link& from);
  bool TakeReceiver(Receiver who);
  void ReleaseReceiver();

  void SenderLoop();
  // The sender thread's side of a threaded op.
  void SendAll();
  // While the calling thread is stuck in sending message `stuck` of driven op `seq`: receive in
  // its place until that send moves.
  void Rescue(std::uint64_t seq, std::size_t stuck);
  // Tells each link that is owed a message of this op, from message `next` on (but `skip`, whose
  // send failed), in place of its next one, which rank caused the failure.
  void SendNotices(std::size_t next, const Link* skip);
  // Records the op's first failure; a notice replaces what a sender saw (its consequence).
  void Fail(Status status, int culprit, Source source);
  std::optional<Source> FailureSource();
  // Waits until the sender has finished op `seq`; `abandoned`: the op failed and the sender was
  // told so.
  void WaitForSender(std::uint64_t seq, bool abandoned);

  // The ring's chunk c of the current op's range.
  std::span<float> Chunk(int c) const;
  int Mod(int r) const { return ((r % world_) + world_) % world_; }
  // The rank at the other end of `link`, left_ or right_.
  int PeerRank(const Link* link) const { return link == right_ ? Mod(rank_ + 1) : Mod(rank_ - 1); }

  const int rank_;
  const int world_;
  // Not owned: the caller keeps both alive while this ring exists (see the contract above).
  Link* const left_;
  Link* const right_;
  const RingOptions options_;
  Status unusable_;      // why no op can run (bad arguments, an earlier failure); OK if none
  RingOpStats last_op_;  // written by the calling thread only
  Clock::time_point op_start_{};
  std::vector<float> scratch_;   // one segment from the left, before it is added in
  // Small ranges: every rank's whole range, rank r's at block r; middle ones: ScatterSlot's.
  std::vector<float> gathered_;
  // After a rescue the next threaded_left_ ops are threaded: backoff_ of them, doubling with each
  // rescue that follows soon after and halving after long runs without one (a send preempted for
  // long looks stuck too, so a rescue alone does not prove that this transport cannot buffer).
  std::size_t threaded_left_ = 0;
  std::size_t backoff_ = 0;
  std::size_t clean_ops_ = 0;         // driven ops since the last rescue
  std::atomic<bool> rescued_{false};  // set by the sender thread when it rescued this op

  // The current op: written by the calling thread before it bumps op_seq_ or watch_seq_, read by
  // the other thread after it sees the bump, constant until the op ends (threaded: until the
  // sender bumps done_seq_; driven: until the calling thread holds the receiver and clears
  // watch_seq_).
  std::span<float> data_;
  std::uint32_t op_ = 0;
  Deadline deadline_{};
  std::vector<Outgoing> sends_;     // what this rank sends, in order
  std::vector<Incoming> receives_;  // what this rank receives, in order
  std::size_t ahead_ = 0;  // driven: how many messages the calling thread sends ahead of receiving

  std::atomic<std::uint64_t> op_seq_{0};     // bumped to start a threaded op
  std::atomic<std::uint64_t> done_seq_{0};   // the last threaded op the sender has finished
  std::uint64_t drives_ = 0;                 // ops the calling thread has driven
  std::atomic<std::uint64_t> watch_seq_{0};  // the driven op being watched (0: none)
  bool threaded_ = false;                    // the current op is threaded
  std::atomic<bool> sender_idle_{false};     // the sender thread sleeps until rung (else it looks
                                             // every kWatchPeriod)
  std::atomic<std::size_t> posted_{0};       // messages of this op ready to send
  std::atomic<std::size_t> sent_{0};         // messages of this op sent
  std::atomic<std::size_t> received_{0};     // messages of this op received and dealt with
  std::atomic<bool> sending_{false};         // driven: the calling thread is inside a Send
  std::atomic<pid_t> caller_tid_{0};         // driven: the calling thread
  std::atomic<int> receiver_{kNobody};
  std::atomic<Clock::rep> first_arrival_{0};  // since op_start_, +1; 0 until the first message
  std::atomic<bool> abandon_{false};          // the caller failed: send a notice, not the rest
  std::atomic<bool> failed_{false};           // failure_ is set
  std::atomic<bool> shutdown_{false};
  std::mutex failure_mu_;
  std::optional<Failure> failure_;  // guarded by failure_mu_
  Doorbell sender_bell_;            // the sender thread waits on it (threaded ops, idle)
  Doorbell rescue_bell_;            // the sender thread waits on it for sends while rescuing
  Doorbell caller_bell_;            // the calling thread waits on it
  std::thread sender_;              // when world > 1
};

}  // namespace dtrain::dist
