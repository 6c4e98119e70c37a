#include "core/dist/ring_allreduce.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

namespace dtrain::dist {
namespace {

// Marks a failure notice: the tag of the op it abandons, with this bit set.
constexpr std::uint32_t kNoticeBit = 0x80000000u;
// How long a failure notice may take to go out; past it the right neighbour learns from its own
// deadline instead.
constexpr auto kNoticeGrace = std::chrono::milliseconds(250);

// Segments are cut so that a chunk makes at least kPipelineDepth of them, but none smaller than
// kMinSegment floats (unless RingOptions::segment_floats says so).
constexpr std::size_t kPipelineDepth = 4;
constexpr std::size_t kMinSegment = 4096;

std::string RankName(int rank) { return "rank " + std::to_string(rank); }

// acc = acc + in, or (acc + in) * scale for the last reduce-scatter step of a mean.
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
  shutdown_.store(true, std::memory_order_release);
  sender_bell_.Ring();
  sender_.join();
}

Status RingAllReduce::AllReduceSum(std::span<float> data, std::uint32_t op) {
  return Run(data, op, 1.0f);
}

Status RingAllReduce::AllReduceMean(std::span<float> data, std::uint32_t op) {
  return Run(data, op, 1.0f / static_cast<float>(world_));
}

std::size_t RingAllReduce::ChunkSize(int c) const {
  const std::size_t n = static_cast<std::size_t>(world_);
  const std::size_t index = static_cast<std::size_t>(c);
  return data_.size() / n + (index < data_.size() % n ? 1 : 0);
}

std::size_t RingAllReduce::ChunkBegin(int c) const {
  const std::size_t n = static_cast<std::size_t>(world_);
  const std::size_t index = static_cast<std::size_t>(c);
  return index * (data_.size() / n) + std::min(index, data_.size() % n);
}

std::size_t RingAllReduce::Segments(int c) const {
  return (ChunkSize(c) + segment_ - 1) / segment_;
}

std::span<float> RingAllReduce::Segment(int c, std::size_t k) const {
  const std::size_t offset = k * segment_;
  return data_.subspan(ChunkBegin(c) + offset, std::min(segment_, ChunkSize(c) - offset));
}

Status RingAllReduce::Run(std::span<float> data, std::uint32_t op, float scale) {
  if (!unusable_.ok()) return unusable_;
  const std::string where = "all-reduce op " + std::to_string(op) + " at rank " +
                            std::to_string(rank_) + " of " + std::to_string(world_) + ": ";
  if (op > kMaxOp) return Status::Error(where + "op tags must be below 2^31");
  if (world_ == 1) return Status::Ok();

  data_ = data;
  op_ = op;
  op_start_ = Clock::now();
  deadline_ = op_start_ + options_.timeout;
  // Deep enough a pipeline for small ranges too, of messages not so small that their fixed
  // costs dominate; the same on every rank, as it depends only on the size and the world.
  segment_ = std::min(options_.segment_floats,
                      std::max(kMinSegment, (ChunkSize(0) + kPipelineDepth - 1) / kPipelineDepth));
  const int steps = 2 * (world_ - 1);
  send_start_.assign(1, 0);
  last_op_ = {};
  for (int step = 0; step < steps; ++step) {
    send_start_.push_back(send_start_.back() + Segments(Mod(rank_ - step)));
    last_op_.bytes_sent += ChunkSize(Mod(rank_ - step)) * sizeof(float);
    last_op_.bytes_received += ChunkSize(Mod(rank_ - step - 1)) * sizeof(float);
  }
  posted_.store(Segments(rank_), std::memory_order_relaxed);  // step 0 sends this rank's own chunk
  sent_.store(0, std::memory_order_relaxed);
  abandon_.store(false, std::memory_order_relaxed);
  failed_.store(false, std::memory_order_relaxed);
  failure_.reset();
  const std::uint64_t seq = op_seq_.load(std::memory_order_relaxed) + 1;
  op_seq_.store(seq, std::memory_order_release);
  sender_bell_.Ring();

  ReceiveAll(scale);
  const bool failed = failed_.load(std::memory_order_acquire);
  if (failed) {
    abandon_.store(true, std::memory_order_release);
    sender_bell_.Ring();
  }
  WaitForSender(seq, failed);

  std::lock_guard lock(failure_mu_);
  if (!failure_) return Status::Ok();
  unusable_ = Status::Error("ring all-reduce at rank " + std::to_string(rank_) + " of " +
                            std::to_string(world_) + ": refused, op " + std::to_string(op) +
                            " failed: " + failure_->status.message());
  return Status::Error(where + failure_->status.message());
}

void RingAllReduce::AwaitLeft() {
  if (options_.spin.count() <= 0) return;
  const Deadline spin_end = Clock::now() + options_.spin;
  while (!left_->Readable() && !failed_.load(std::memory_order_acquire) &&
         Clock::now() < spin_end) {
    CpuRelax();
  }
}

void RingAllReduce::ReceiveAll(float scale) {
  const int steps = 2 * (world_ - 1);
  const int left_rank = Mod(rank_ - 1);
  // Set once the sender has failed (this thread returns at its own failures). The right
  // neighbour's failure may be the echo of an earlier one elsewhere (a rank that gave up closes
  // its links), whose notice is then on its way round the ring: keep receiving, without posting,
  // until it comes or kNoticeGrace has passed.
  std::optional<Deadline> cause_by;
  for (int s = 0; s < steps; ++s) {
    const int chunk = Mod(rank_ - s - 1);
    const bool reduce = s < world_ - 1;
    const float step_scale = s == world_ - 2 ? scale : 1.0f;  // the step that finishes the chunk
    for (std::size_t k = 0, count = Segments(chunk); k < count; ++k) {
      if (cause_by && Clock::now() >= *cause_by) return;
      const std::span<float> segment = Segment(chunk, k);
      // A reduce-scatter segment lands beside this rank's own values, an all-gather one in place.
      const std::span<float> into =
          reduce ? std::span<float>(scratch_).first(segment.size()) : segment;
      if (!reduce && !AwaitSent(send_start_[s + 1 - world_] + k)) return;
      if (!cause_by) AwaitLeft();
      if (!cause_by && failed_.load(std::memory_order_acquire)) {
        cause_by = std::min(deadline_, Clock::now() + kNoticeGrace);
      }
      Result<std::uint32_t> tag = left_->RecvAnyTag(into, cause_by.value_or(deadline_));
      if (!tag.ok()) {
        if (!cause_by) Fail(tag.status(), left_rank, Source::kReceiver);
        return;
      }
      if (tag.value() != op_) return FailOnTag(tag.value(), into);
      if (s == 0 && k == 0) {
        last_op_.wait_seconds = std::chrono::duration<double>(Clock::now() - op_start_).count();
      }
      if (cause_by) continue;
      if (reduce) Accumulate(segment, into, step_scale);
      if (s + 1 < steps) {
        posted_.fetch_add(1, std::memory_order_release);  // the sender forwards it in step s+1
        sender_bell_.Ring();
      }
    }
  }
}

bool RingAllReduce::AwaitSent(std::size_t message) {
  // Already true but for a moment in practice: the segment went round the ring since.
  const bool sent = caller_bell_.Wait(
      [&] {
        return sent_.load(std::memory_order_acquire) > message ||
               failed_.load(std::memory_order_acquire);
      },
      options_.spin, deadline_ + kNoticeGrace);
  if (!sent) {
    Fail(Status::Error("timeout: sending to " + right_->peer() + " overran the op's deadline"),
         Mod(rank_ + 1), Source::kSender);
  }
  return sent;
}

void RingAllReduce::FailOnTag(std::uint32_t tag, std::span<const float> message) {
  const int left_rank = Mod(rank_ - 1);
  if ((tag & kNoticeBit) == 0) {
    return Fail(left_->TagMismatch(op_, tag), left_rank, Source::kReceiver);
  }
  const std::uint32_t abandoned = tag & ~kNoticeBit;
  if (abandoned != op_) {
    return Fail(Status::Error("tag mismatch: " + left_->peer() + " gave up op " +
                              std::to_string(abandoned) + " where op " + std::to_string(op_) +
                              " was expected"),
                left_rank, Source::kReceiver);
  }
  const float culprit = message.front();
  if (culprit >= 0.0f && culprit < static_cast<float>(world_) && culprit == std::floor(culprit)) {
    const int who = static_cast<int>(culprit);
    return Fail(Status::Error(left_->peer() + " gave up op " + std::to_string(op_) +
                              " because of " + RankName(who)),
                who, Source::kNotice);
  }
  Fail(Status::Error(left_->peer() + " gave up op " + std::to_string(op_)), left_rank,
       Source::kNotice);
}

void RingAllReduce::Fail(Status status, int culprit, Source source) {
  std::lock_guard lock(failure_mu_);
  if (!failure_) {
    failure_ = Failure{std::move(status), culprit, source};
  } else if (failure_->source == Source::kSender && source == Source::kNotice) {
    // The notice names the cause; what the sender saw was its consequence.
    failure_ = Failure{
        Status::Error(status.message() + " (also seen: " + failure_->status.message() + ")"),
        culprit, source};
  }
  failed_.store(true, std::memory_order_release);
}

void RingAllReduce::WaitForSender(std::uint64_t seq, bool abandoned) {
  const auto done = [&] { return done_seq_.load(std::memory_order_acquire) == seq; };
  // A sender with work finishes by deadline_, which every Send has; an abandoning one needs at
  // most its current message and the notice. Past that a Send is stuck on a peer that does not
  // read (the op has failed anyway) or overran its link's deadline: closing the link ends it, as
  // the Link contract promises.
  const Deadline limit = abandoned ? Clock::now() + 2 * kNoticeGrace : deadline_ + kNoticeGrace;
  if (caller_bell_.Wait(done, options_.spin, limit)) return;
  right_->Close();
  caller_bell_.Wait(done, options_.spin, Deadline::max());
  Fail(Status::Error("sending to " + right_->peer() + " overran the op's deadline"), Mod(rank_ + 1),
       Source::kSender);
}

void RingAllReduce::SenderLoop() {
  std::uint64_t seen = 0;
  for (;;) {
    sender_bell_.Wait(
        [&] {
          return shutdown_.load(std::memory_order_acquire) ||
                 op_seq_.load(std::memory_order_acquire) != seen;
        },
        options_.spin, Deadline::max());
    if (shutdown_.load(std::memory_order_acquire)) return;
    seen = op_seq_.load(std::memory_order_acquire);
    SendAll();
    done_seq_.store(seen, std::memory_order_release);
    caller_bell_.Ring();
  }
}

void RingAllReduce::SendAll() {
  const int steps = 2 * (world_ - 1);
  std::size_t sent = 0;
  for (int s = 0; s < steps; ++s) {
    const int chunk = Mod(rank_ - s);
    for (std::size_t k = 0, count = Segments(chunk); k < count; ++k, ++sent) {
      // No deadline needed: the calling thread posts every message or abandons the op, both
      // within deadline_.
      sender_bell_.Wait(
          [&] {
            return posted_.load(std::memory_order_acquire) > sent ||
                   abandon_.load(std::memory_order_acquire);
          },
          options_.spin, Deadline::max());
      const std::span<float> segment = Segment(chunk, k);
      if (abandon_.load(std::memory_order_acquire)) return SendNotice(segment.size());
      if (Status st = right_->Send(op_, segment, deadline_); !st.ok()) {
        return Fail(std::move(st), Mod(rank_ + 1), Source::kSender);
      }
      sent_.store(sent + 1, std::memory_order_release);
      caller_bell_.Ring();
    }
  }
}

void RingAllReduce::SendNotice(std::size_t floats) {
  // The right neighbour expects `floats` floats next; the notice takes their place, its first
  // float naming the rank that caused the failure. Best effort: the op has failed already.
  std::vector<float> notice(floats, 0.0f);
  {
    std::lock_guard lock(failure_mu_);
    notice.front() = static_cast<float>(failure_ ? failure_->culprit : rank_);
  }
  right_->Send(op_ | kNoticeBit, notice, Clock::now() + kNoticeGrace);
}

}  // namespace dtrain::dist
