#include "core/dist/ring_allreduce.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "core/dist/ring_order_sum.h"
#include "core/dist/shard_ranges.h"
#include "core/unique_fd.h"

namespace dtrain::dist {
namespace {

// Marks a failure notice: the tag of the op it abandons, with this bit set.
constexpr std::uint32_t kNoticeBit = 0x80000000u;
// How long a failure notice may take to go out; past it the right neighbour learns from its own
// deadline instead.
constexpr auto kNoticeGrace = std::chrono::milliseconds(250);

// Rings of more than two ranks are driven by the calling thread only for ranges up to this many
// bytes; larger ones go faster threaded (bench/README.md: 4 ranks on 2 cores, 16 MiB and more).
constexpr std::size_t kDrivenRingBytes = 8 << 20;
// While the calling thread drives an op, the sender thread looks this often whether its send has
// moved; one seen under way at kStuckLooks looks in a row (so for kWatchPeriod * (kStuckLooks-1)
// at least) is rescued if the calling thread sleeps in it (rather than being preempted).
constexpr auto kWatchPeriod = std::chrono::milliseconds(2);
constexpr int kStuckLooks = 3;
// ... and keeps looking this long after an op, so that back-to-back ops need not wake it.
constexpr auto kWatchLinger = std::chrono::milliseconds(10);
// Threaded ops after a first rescue, and at most after rescues in a row (see threaded_left_).
constexpr std::size_t kMinBackoff = 16;
constexpr std::size_t kMaxBackoff = 4096;

std::string RankName(int rank) { return "rank " + std::to_string(rank); }

// Whether thread `tid` of this process is runnable (running, or preempted) rather than asleep,
// from /proc (Linux); false when that cannot be told.
bool Runnable(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
  const UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  char buf[512];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return false;
  buf[n] = '\0';
  // "tid (comm) S ...": the state follows the last ')', as comm may contain one.
  const char* end = std::strrchr(buf, ')');
  return end != nullptr && end[1] == ' ' && end[2] == 'R';
}

// acc = acc + in, or (acc + in) * scale where that sum finishes a mean.
void Accumulate(std::span<float> acc, std::span<const float> in, float scale) {
  float* a = acc.data();
  const float* b = in.data();
  const std::size_t n = acc.size();
  if (scale == 1.0f) {
    for (std::size_t i = 0; i < n; ++i) a[i] += b[i];
  } else {
    for (std::size_t i = 0; i < n; ++i) a[i] = (a[i] + b[i]) * scale;
  }
}

}  // namespace

RingAllReduce::RingAllReduce(int rank, int world, Link* left, Link* right, RingOptions options)
    : rank_(rank), world_(world), left_(left), right_(right), options_(options) {
  const std::string me =
      "ring all-reduce at rank " + std::to_string(rank) + " of " + std::to_string(world) + ": ";
  if (world < 1 || rank < 0 || rank >= world) {
    unusable_ = Status::Error(me + "the rank must be in [0, world) and world >= 1");
  } else if (world > 1 && (left == nullptr || right == nullptr)) {
    unusable_ = Status::Error(me + "needs a left and a right link");
  } else if (options.segment_floats == 0 || options.timeout.count() <= 0) {
    unusable_ = Status::Error(me + "segment_floats and timeout must be positive");
  }
  if (!unusable_.ok() || world == 1) return;
  scratch_.resize(options.segment_floats);
  sender_ = std::thread(&RingAllReduce::SenderLoop, this);
}

RingAllReduce::~RingAllReduce() {
  if (!sender_.joinable()) return;
  shutdown_.store(true, std::memory_order_seq_cst);
  sender_bell_.Ring();
  sender_.join();
}

void RingAllReduce::Leave() {
  if (unusable_.ok()) {
    unusable_ = Status::Error("ring all-reduce at rank " + std::to_string(rank_) + " of " +
                              std::to_string(world_) + ": this rank left the ring");
  }
}

Status RingAllReduce::AllReduceSum(std::span<float> data, std::uint32_t op) {
  return Reduce(data, op, 1.0f);
}

Status RingAllReduce::AllReduceMean(std::span<float> data, std::uint32_t op) {
  return Reduce(data, op, 1.0f / static_cast<float>(world_));
}

Status RingAllReduce::Reduce(std::span<float> data, std::uint32_t op, float scale) {
  if (unusable_.ok() && ScattersToSum(data.size_bytes())) return ReduceBothWays(data, op, scale);
  if (!unusable_.ok() || !GathersToSum(data.size_bytes())) {
    return Run(data, op, Collective::kReduce, scale);
  }
  // Small ranges: every rank's whole range to every rank, then the ring's sums computed here.
  gathered_.resize(data.size() * static_cast<std::size_t>(world_));
  std::copy(data.begin(), data.end(), gathered_.begin() + rank_ * std::ssize(data));
  if (Status s = Run(gathered_, op, Collective::kGather, 1.0f); !s.ok()) return s;
  SumInRingOrder(gathered_, world_, scale, data);
  return Status::Ok();
}

Status RingAllReduce::ReduceBothWays(std::span<float> data, std::uint32_t op, float scale) {
  // Every rank's values of this rank's chunk, this rank's own among them; its sum in the ring's
  // order; then every rank's sum.
  data_ = data;
  gathered_.resize(Chunk(0).size() * static_cast<std::size_t>(world_ * world_));
  if (Status s = Run(data, op, Collective::kScatter, 1.0f); !s.ok()) return s;
  const RingOpStats scattered = last_op_;
  const std::span<float> own = Chunk(rank_);
  std::ranges::copy(own, ScatterSlot(rank_, rank_).begin());
  SumChunkInRingOrder(ScatterSlot(0, rank_).data(), Chunk(0).size() * world_, world_, rank_, scale,
                      own);
  if (Status s = Run(data, op, Collective::kGatherBothWays, 1.0f); !s.ok()) return s;
  last_op_.wait_seconds = scattered.wait_seconds;
  last_op_.bytes_sent += scattered.bytes_sent;
  last_op_.bytes_received += scattered.bytes_received;
  return Status::Ok();
}

Status RingAllReduce::AllGather(std::span<float> data, std::uint32_t op) {
  if (world_ > 0 && data.size() % static_cast<std::size_t>(world_) != 0) {
    return Status::Error("all-gather op " + std::to_string(op) + " at rank " +
                         std::to_string(rank_) + " of " + std::to_string(world_) + ": " +
                         std::to_string(data.size()) + " floats are not " + std::to_string(world_) +
                         " equal blocks");
  }
  return Run(data, op, Collective::kGather, 1.0f);
}

Status RingAllReduce::Run(std::span<float> data, std::uint32_t op, Collective collective,
                          float scale) {
  if (!unusable_.ok()) return unusable_;
  const std::string where = "all-reduce op " + std::to_string(op) + " at rank " +
                            std::to_string(rank_) + " of " + std::to_string(world_) + ": ";
  if (op > kMaxOp) return Status::Error(where + "op tags must be below 2^31");
  if (world_ == 1) return Status::Ok();

  data_ = data;
  op_ = op;
  op_start_ = Clock::now();
  deadline_ = op_start_ + options_.timeout;
  last_op_ = {};
  sends_.clear();
  receives_.clear();
  if (collective == Collective::kGather) {
    PlanGather(GathersToSum(Chunk(0).size_bytes()));
  } else if (collective == Collective::kGatherBothWays) {
    PlanGather(true);
  } else if (collective == Collective::kScatter) {
    PlanScatter();
  } else if (world_ == 2 && options_.direct_exchange) {
    PlanExchange(scale);
  } else {
    PlanRing(scale);
  }
  sent_.store(0, std::memory_order_relaxed);
  received_.store(0, std::memory_order_relaxed);
  first_arrival_.store(0, std::memory_order_relaxed);
  abandon_.store(false, std::memory_order_relaxed);
  failed_.store(false, std::memory_order_relaxed);
  {
    std::lock_guard lock(failure_mu_);
    failure_.reset();
  }

  bool failed = false;
  bool driven = false;
  if (caller_sends() && (world_ == 2 || data.size_bytes() <= kDrivenRingBytes)) {
    driven = true;
    threaded_ = false;
    rescued_.store(false, std::memory_order_relaxed);
    caller_tid_.store(::gettid(), std::memory_order_relaxed);
    sending_.store(false, std::memory_order_relaxed);
    // The sender thread watches this op: it looks by itself every kWatchPeriod, or sleeps and
    // needs a ring (this seq_cst store and load pair with its own before it sleeps).
    watch_seq_.store(++drives_, std::memory_order_seq_cst);
    if (sender_idle_.load(std::memory_order_seq_cst)) sender_bell_.Ring();
    Drive();
  } else {
    if (threaded_left_ > 0) --threaded_left_;
    threaded_ = true;
    const std::uint64_t seq = op_seq_.load(std::memory_order_relaxed) + 1;
    op_seq_.store(seq, std::memory_order_seq_cst);
    sender_bell_.Ring();
    ReceiveAll();
    failed = failed_.load(std::memory_order_acquire);
    if (failed) {
      abandon_.store(true, std::memory_order_seq_cst);
      sender_bell_.Ring();
    }
    WaitForSender(seq, failed);
  }
  if (driven && rescued_.load(std::memory_order_acquire)) {
    backoff_ = backoff_ == 0 ? kMinBackoff : std::min(kMaxBackoff, 2 * backoff_);
    threaded_left_ = backoff_;
    clean_ops_ = 0;
  } else if (driven && backoff_ > 0 && ++clean_ops_ >= 4 * backoff_) {
    backoff_ = backoff_ / 2 < kMinBackoff ? 0 : backoff_ / 2;
    clean_ops_ = 0;
  }
  if (const Clock::rep at = first_arrival_.load(std::memory_order_acquire); at > 0) {
    last_op_.wait_seconds = std::chrono::duration<double>(Clock::duration(at - 1)).count();
  }

  std::lock_guard lock(failure_mu_);
  if (!failure_) return Status::Ok();
  unusable_ = Status::Error("ring all-reduce at rank " + std::to_string(rank_) + " of " +
                            std::to_string(world_) + ": refused, op " + std::to_string(op) +
                            " failed: " + failure_->status.message());
  return Status::Error(where + failure_->status.message());
}

template <typename Ready>
bool RingAllReduce::WaitOn(Doorbell& bell, Ready ready, Deadline deadline) {
  if (ready()) return true;
  if (options_.yield.count() > 0) {
    const Deadline end = std::min(Clock::now() + options_.yield, deadline);
    while (Clock::now() < end) {
      std::this_thread::yield();
      if (ready()) return true;
    }
  }
  return bell.Wait(ready, options_.spin, deadline);
}

bool RingAllReduce::TakeReceiver(Receiver who) {
  int expected = kNobody;
  return receiver_.compare_exchange_strong(expected, who, std::memory_order_acq_rel);
}

void RingAllReduce::ReleaseReceiver() { receiver_.store(kNobody, std::memory_order_seq_cst); }

void RingAllReduce::Drive() {
  const std::size_t sends = sends_.size(), receives = receives_.size();
  std::size_t ns = 0;  // messages sent
  bool send_failed = false;
  while (!failed_.load(std::memory_order_acquire)) {
    const std::size_t nr = received_.load(std::memory_order_acquire);
    const std::size_t posted = posted_.load(std::memory_order_acquire);
    // Send what is ready, up to ahead_ messages ahead of what came in, and whatever the next
    // message to come needs sent first.
    if (ns < posted && (nr == receives || ns < nr + ahead_ || receives_[nr].after_sent > ns)) {
      sending_.store(true, std::memory_order_seq_cst);
      Status st = sends_[ns].to->Send(op_, sends_[ns].values, deadline_);
      sending_.store(false, std::memory_order_seq_cst);
      if (!st.ok()) {
        Fail(std::move(st), PeerRank(sends_[ns].to), Source::kSender);
        send_failed = true;
        rescue_bell_.Ring();
        break;
      }
      sent_.store(++ns, std::memory_order_seq_cst);
      rescue_bell_.Ring();
      continue;
    }
    if (nr == receives) break;  // and so ns == sends: done
    if (!TakeReceiver(kCaller)) {
      // The sender thread receives in this thread's place (its send was stuck): wait until it lets
      // go, or has dealt with a message, which may let this thread send.
      const bool moved = WaitOn(
          caller_bell_,
          [&] {
            return receiver_.load(std::memory_order_acquire) == kNobody ||
                   received_.load(std::memory_order_acquire) != nr ||
                   posted_.load(std::memory_order_acquire) != posted ||
                   failed_.load(std::memory_order_acquire);
          },
          deadline_ + kNoticeGrace);
      if (!moved) {
        const Link* from = receives_[nr].from;
        Fail(
            Status::Error("timeout: receiving from " + from->peer() + " overran the op's deadline"),
            PeerRank(from), Source::kReceiver);
      }
      continue;
    }
    if (received_.load(std::memory_order_acquire) == nr) {
      AwaitReadable(*receives_[nr].from);
      ReceiveMessage(nr, std::nullopt, caller_bell_);
    }
    ReleaseReceiver();
  }

  if (std::optional<Source> source = FailureSource()) {
    if (send_failed && *source == Source::kSender) AwaitNotice();
    // Where this rank's send failed (or its peer did not read), not over that link.
    const bool sender_failed = send_failed || *source == Source::kSender;
    SendNotices(ns, sender_failed && ns < sends ? sends_[ns].to : nullptr);
  }
  // Take the receiving side back from the sender thread, and end the watch, so that nothing of
  // this op is touched once it returns. The sender thread lets go as soon as its current message
  // is in (or its link fails); on a failed op, closing its link ends a receive that would wait.
  bool closed = false;
  while (!TakeReceiver(kCaller)) {
    const bool free = WaitOn(
        caller_bell_, [&] { return receiver_.load(std::memory_order_acquire) == kNobody; },
        closed || !failed_.load(std::memory_order_acquire) ? Deadline::max()
                                                           : Clock::now() + 2 * kNoticeGrace);
    if (!free) {
      const std::size_t n = received_.load(std::memory_order_acquire);  // the rescuer's
      (n < receives ? receives_[n].from : left_)->Close();
      closed = true;
    }
  }
  watch_seq_.store(0, std::memory_order_seq_cst);
  ReleaseReceiver();
}

void RingAllReduce::AwaitNotice() {
  const Deadline cause_by = std::min(deadline_, Clock::now() + kNoticeGrace);
  // The sender thread may be receiving in this thread's place; take over from it.
  const bool receiving = WaitOn(
      caller_bell_, [&] { return TakeReceiver(kCaller); }, cause_by);
  if (!receiving) return;
  ReceiveCauses(received_.load(std::memory_order_acquire), cause_by, caller_bell_);
  ReleaseReceiver();
}

void RingAllReduce::ReceiveCauses(std::size_t from, Deadline cause_by, Doorbell& bell) {
  // A send's failure may be the echo of an earlier one elsewhere (a rank that gave up closes its
  // links), whose notice is then on its way: keep receiving, without posting, until it comes.
  const Link* dead = nullptr;  // whose receive failed
  for (std::size_t n = from; n < receives_.size() && Clock::now() < cause_by; ++n) {
    Link* link = receives_[n].from;
    if (link == dead) continue;
    if (ReceiveMessage(n, cause_by, bell)) continue;
    if (dead != nullptr || FailureSource() == Source::kNotice) return;
    dead = link;
  }
}

void RingAllReduce::ReceiveAll() {
  for (std::size_t n = 0; n < receives_.size(); ++n) {
    AwaitReadable(*receives_[n].from);
    // The sender failed (this thread returns at its own failures).
    if (failed_.load(std::memory_order_acquire)) {
      return ReceiveCauses(n, std::min(deadline_, Clock::now() + kNoticeGrace), caller_bell_);
    }
    if (!ReceiveMessage(n, std::nullopt, caller_bell_)) return;
  }
}

bool RingAllReduce::ReceiveMessage(std::size_t n, const std::optional<Deadline>& cause_by,
                                   Doorbell& bell) {
  const Incoming& in = receives_[n];
  // A reduced segment lands beside this rank's own values, a copied one in place; after a
  // failure everything lands aside.
  const bool in_place = !in.reduce && !cause_by;
  const std::span<float> into =
      in_place ? in.values : std::span<float>(scratch_).first(in.values.size());
  if (in_place && !AwaitSent(in.after_sent, bell)) return false;
  // A segment to reduce whose own values this rank has sent already is added in as it is read,
  // where the link can (shared memory: no copy into the scratch); any other lands in `into`.
  Result<Link::Received> got = Link::Received{};
  if (in.reduce && !cause_by) {
    const Link::FoldAccept accept = [&](std::uint32_t tag) {
      return tag == op_ && sent_.load(std::memory_order_acquire) >= in.after_sent &&
             !failed_.load(std::memory_order_acquire);
    };
    const Link::FoldPiece add = [&](std::size_t offset, std::span<const float> floats) {
      Accumulate(in.values.subspan(offset, floats.size()), floats, in.scale);
    };
    got = in.from->RecvFold(into, accept, add, deadline_);
  } else if (Result<std::uint32_t> tag = in.from->RecvAnyTag(into, cause_by.value_or(deadline_));
             tag.ok()) {
    got = Link::Received{.tag = tag.value(), .folded = false};
  } else {
    got = tag.status();
  }
  if (!got.ok()) {
    if (!cause_by) Fail(got.status(), PeerRank(in.from), Source::kReceiver);
    return false;
  }
  if (got.value().tag != op_) {
    FailOnTag(got.value().tag, into, *in.from);
    return false;
  }
  if (first_arrival_.load(std::memory_order_relaxed) == 0) {
    first_arrival_.store((Clock::now() - op_start_).count() + 1, std::memory_order_release);
  }
  if (cause_by) return true;
  if (in.reduce && !got.value().folded) {
    if (!AwaitSent(in.after_sent, bell)) return false;
    // After a failure a send may still be reading these values, which no longer matter.
    if (!failed_.load(std::memory_order_acquire)) Accumulate(in.values, into, in.scale);
  }
  if (in.forward) {
    posted_.fetch_add(1, std::memory_order_seq_cst);
    if (threaded_) sender_bell_.Ring();
  }
  received_.store(n + 1, std::memory_order_seq_cst);
  return true;
}

void RingAllReduce::AwaitReadable(Link& link) {
  const auto ready = [&] { return link.Readable() || failed_.load(std::memory_order_acquire); };
  if (options_.yield.count() > 0) {
    const Deadline end = Clock::now() + options_.yield;
    while (!ready() && Clock::now() < end) std::this_thread::yield();
  }
  if (options_.spin.count() > 0) {
    const Deadline end = Clock::now() + options_.spin;
    while (!ready() && Clock::now() < end) CpuRelax();
  }
}

bool RingAllReduce::AwaitSent(std::size_t count, Doorbell& bell) {
  // In the ring, already true but for a moment in practice: the segment went round the ring
  // since. With two ranks, the peer's segment k usually comes after this rank sent its own.
  const bool sent = WaitOn(
      bell,
      [&] {
        return sent_.load(std::memory_order_acquire) >= count ||
               failed_.load(std::memory_order_acquire);
      },
      deadline_ + kNoticeGrace);
  if (!sent) {
    const Link* to = sends_[count - 1].to;  // count > 0: nothing to wait for otherwise
    Fail(Status::Error("timeout: sending to " + to->peer() + " overran the op's deadline"),
         PeerRank(to), Source::kSender);
  }
  return sent;
}

void RingAllReduce::FailOnTag(std::uint32_t tag, std::span<const float> message, const Link& from) {
  const int from_rank = PeerRank(&from);
  if ((tag & kNoticeBit) == 0) {
    return Fail(from.TagMismatch(op_, tag), from_rank, Source::kReceiver);
  }
  const std::uint32_t abandoned = tag & ~kNoticeBit;
  if (abandoned != op_) {
    return Fail(
        Status::Error("tag mismatch: " + from.peer() + " gave up op " + std::to_string(abandoned) +
                      " where op " + std::to_string(op_) + " was expected"),
        from_rank, Source::kReceiver);
  }
  const float culprit = message.empty() ? -1.0f : message.front();
  if (culprit >= 0.0f && culprit < static_cast<float>(world_) && culprit == std::floor(culprit)) {
    const int who = static_cast<int>(culprit);
    return Fail(Status::Error(from.peer() + " gave up op " + std::to_string(op_) + " because of " +
                              RankName(who)),
                who, Source::kNotice);
  }
  Fail(Status::Error(from.peer() + " gave up op " + std::to_string(op_)), from_rank,
       Source::kNotice);
}

void RingAllReduce::Fail(Status status, int culprit, Source source) {
  {
    std::lock_guard lock(failure_mu_);
    if (!failure_) {
      failure_ = Failure{std::move(status), culprit, source};
    } else if (failure_->source == Source::kSender && source == Source::kNotice) {
      // The notice names the cause; what the sender saw was its consequence.
      failure_ = Failure{
          Status::Error(status.message() + " (also seen: " + failure_->status.message() + ")"),
          culprit, source};
    }
    failed_.store(true, std::memory_order_seq_cst);
  }
  // Whoever waits for the other thread looks again.
  caller_bell_.Ring();
  rescue_bell_.Ring();
}

std::optional<RingAllReduce::Source> RingAllReduce::FailureSource() {
  std::lock_guard lock(failure_mu_);
  if (!failure_) return std::nullopt;
  return failure_->source;
}

void RingAllReduce::WaitForSender(std::uint64_t seq, bool abandoned) {
  const auto done = [&] { return done_seq_.load(std::memory_order_acquire) == seq; };
  // A sender with work finishes by deadline_, which every Send has; an abandoning one needs at
  // most its current message and the notice. Past that a Send is stuck on a peer that does not
  // read (the op has failed anyway) or overran its link's deadline: closing the link ends it, as
  // the Link contract promises.
  const Deadline limit = abandoned ? Clock::now() + 2 * kNoticeGrace : deadline_ + kNoticeGrace;
  if (WaitOn(caller_bell_, done, limit)) return;
  // The sender is stuck in message sent_.
  const std::size_t stuck = sent_.load(std::memory_order_acquire);
  Link* to = stuck < sends_.size() ? sends_[stuck].to : right_;
  to->Close();
  caller_bell_.Wait(done, options_.spin, Deadline::max());
  Fail(Status::Error("sending to " + to->peer() + " overran the op's deadline"), PeerRank(to),
       Source::kSender);
}

void RingAllReduce::SenderLoop() {
  std::uint64_t seen = 0;  // the last threaded op
  // The last look at a driven op: which, how far its sends had got, and whether one was under way.
  std::uint64_t looked_seq = 0;
  std::size_t looked_sent = 0;
  int looks = 0;  // in a row that saw that send under way
  Deadline watch_until = Deadline::min();
  const auto work = [&] {
    return shutdown_.load(std::memory_order_seq_cst) ||
           op_seq_.load(std::memory_order_seq_cst) != seen;
  };
  for (;;) {
    if (watch_seq_.load(std::memory_order_seq_cst) == 0 && Clock::now() >= watch_until) {
      sender_idle_.store(true, std::memory_order_seq_cst);
      sender_bell_.Wait([&] { return work() || watch_seq_.load(std::memory_order_seq_cst) != 0; },
                        std::chrono::microseconds(0), Deadline::max());
      sender_idle_.store(false, std::memory_order_seq_cst);
    } else {
      sender_bell_.Wait(work, std::chrono::microseconds(0), Clock::now() + kWatchPeriod);
    }
    if (shutdown_.load(std::memory_order_seq_cst)) return;
    if (op_seq_.load(std::memory_order_seq_cst) != seen) {
      seen = op_seq_.load(std::memory_order_seq_cst);
      SendAll();
      done_seq_.store(seen, std::memory_order_seq_cst);
      caller_bell_.Ring();
      continue;
    }
    const std::uint64_t seq = watch_seq_.load(std::memory_order_seq_cst);
    if (seq == 0) continue;
    watch_until = Clock::now() + kWatchLinger;
    const std::size_t sent = sent_.load(std::memory_order_seq_cst);
    const bool sending = sending_.load(std::memory_order_seq_cst);
    looks = !sending ? 0 : seq == looked_seq && sent == looked_sent ? looks + 1 : 1;
    if (looks >= kStuckLooks) {
      // A calling thread that is runnable was preempted inside its send rather than blocked in it:
      // look again later.
      if (Runnable(caller_tid_.load(std::memory_order_acquire))) {
        looks = kStuckLooks - 1;
      } else {
        Rescue(seq, sent);
        looks = 0;
      }
    }
    looked_seq = seq;
    looked_sent = sent;
  }
}

void RingAllReduce::Rescue(std::uint64_t seq, std::size_t stuck) {
  if (!TakeReceiver(kRescuer)) return;  // the calling thread is receiving: its send is not stuck
  if (watch_seq_.load(std::memory_order_seq_cst) != seq) {
    ReleaseReceiver();
    caller_bell_.Ring();
    return;
  }
  // The next ops are threaded: this transport may not buffer what the calling thread sends ahead.
  rescued_.store(true, std::memory_order_release);
  const auto still_stuck = [&] {
    return sending_.load(std::memory_order_seq_cst) &&
           sent_.load(std::memory_order_seq_cst) == stuck;
  };
  // Receive in the calling thread's place, which drains the peer's send, which frees the pair.
  while (still_stuck() && !failed_.load(std::memory_order_acquire)) {
    const std::size_t n = received_.load(std::memory_order_acquire);
    if (n == receives_.size()) break;
    const Incoming& in = receives_[n];
    if (!in.reduce && in.after_sent > stuck) break;  // it lands where the stuck send reads
    if (!ReceiveMessage(n, std::nullopt, rescue_bell_)) break;
    caller_bell_.Ring();
  }
  // The op failed while the send is stuck: its peer has most likely stopped reading too. Closing
  // the link ends the send, as the Link contract promises.
  if (failed_.load(std::memory_order_acquire) && still_stuck() &&
      !WaitOn(
          rescue_bell_, [&] { return !still_stuck(); }, Clock::now() + 2 * kNoticeGrace)) {
    sends_[stuck].to->Close();
  }
  ReleaseReceiver();
  caller_bell_.Ring();
}

void RingAllReduce::SendAll() {
  for (std::size_t i = 0; i < sends_.size(); ++i) {
    // No deadline needed: the calling thread posts every message or abandons the op, both
    // within deadline_.
    WaitOn(
        sender_bell_,
        [&] {
          return posted_.load(std::memory_order_acquire) > i ||
                 abandon_.load(std::memory_order_acquire);
        },
        Deadline::max());
    if (abandon_.load(std::memory_order_acquire)) return SendNotices(i, nullptr);
    Link* to = sends_[i].to;
    if (Status st = to->Send(op_, sends_[i].values, deadline_); !st.ok()) {
      Fail(std::move(st), PeerRank(to), Source::kSender);
      // The calling thread may yet learn the cause from a notice (see ReceiveCauses): wait until
      // it gives up the op, for a while, before the links that are still up are told.
      WaitOn(
          sender_bell_, [&] { return abandon_.load(std::memory_order_acquire); },
          Clock::now() + kNoticeGrace);
      return SendNotices(i, to);
    }
    sent_.store(i + 1, std::memory_order_seq_cst);
    caller_bell_.Ring();
  }
}

void RingAllReduce::SendNotices(std::size_t next, const Link* skip) {
  // A link's peer expects the next message this rank sends over it; the notice takes its place,
  // of its size, its first float naming the rank that caused the failure. Best effort: the op
  // has failed already.
  float culprit = 0.0f;
  {
    std::lock_guard lock(failure_mu_);
    culprit = static_cast<float>(failure_ ? failure_->culprit : rank_);
  }
  const Deadline by = Clock::now() + kNoticeGrace;
  std::vector<const Link*> done = {skip};  // the ring sends over one link, a gather over two
  for (std::size_t i = next; i < sends_.size() && done.size() < 3; ++i) {
    Link* to = sends_[i].to;
    if (std::ranges::find(done, to) != done.end()) continue;
    std::vector<float> notice(sends_[i].values.size(), 0.0f);
    notice.front() = culprit;  // no message is empty
    (void)to->Send(op_ | kNoticeBit, notice, by);
    done.push_back(to);
  }
}

}  // namespace dtrain::dist
