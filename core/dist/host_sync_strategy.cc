#include "core/dist/host_sync_strategy.h"

#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <utility>

#include "core/dist/overlapped_sync_strategy.h"
#include "core/dist/shard_ranges.h"
#include "core/dist/sync_strategy.h"
#include "core/math/elementwise.h"
#include "core/optim/clip.h"

namespace dtrain::dist {
namespace internal {

// The segment's first 128 bytes; per-rank counters follow (see the header comment).
struct HostSyncHeader {
  std::uint32_t magic;
  std::uint32_t version;
  std::uint32_t world;
  std::uint32_t state_vectors;                    // the optimizer's, in the segment
  std::uint64_t floats;                           // per gradient, vote tail included
  alignas(64) std::atomic<std::uint32_t> failed;  // the failed rank + 1, 0 while none has
};

struct alignas(64) Counter {
  std::atomic<std::uint64_t> value;
};

}  // namespace internal

namespace {

using internal::Counter;
using internal::HostSyncHeader;

constexpr std::uint32_t kMagic = 0x59534844;  // "DHSY"
constexpr std::uint32_t kVersion = 2;
constexpr std::size_t kHeaderBytes = 128;
constexpr std::size_t kPage = 4096;
constexpr std::size_t kNameFloats = 10;  // "/dtrain-" and 32 hex digits: 40 bytes
constexpr std::uint32_t kSetupTag = RingAllReduce::kMaxOp - 2;
constexpr std::uint32_t kLocalOp = RingAllReduce::kMaxOp - 1;
constexpr std::uint32_t kMappedOp = RingAllReduce::kMaxOp;
// A barrier polls, yielding the core between looks, for this long before it sleeps between
// looks; a peer's liveness is looked at every kLivenessEvery.
constexpr auto kYieldFor = std::chrono::milliseconds(1);
constexpr auto kSleepSlice = std::chrono::microseconds(50);
constexpr auto kLivenessEvery = std::chrono::milliseconds(1);

static_assert(sizeof(HostSyncHeader) == kHeaderBytes);
static_assert(sizeof(Counter) == 64);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

std::size_t CountersBytes(int world) {
  const std::size_t bytes = kHeaderBytes + 2 * static_cast<std::size_t>(world) * sizeof(Counter);
  return (bytes + kPage - 1) / kPage * kPage;
}

std::size_t Stride(std::size_t floats) { return (floats + 15) / 16 * 16; }  // 64-byte aligned

// Floats from the first gradient to the shared parameters, and from those to the optimizer state.
std::size_t GradientsFloats(int world, std::size_t floats) {
  return static_cast<std::size_t>(world) * Stride(floats);
}
std::size_t ParamsFloats(std::size_t params) { return Stride(params); }

std::size_t SegmentBytes(int world, std::size_t floats, std::size_t params, int state_vectors) {
  return CountersBytes(world) + (GradientsFloats(world, floats) + ParamsFloats(params) +
                                 static_cast<std::size_t>(state_vectors) * params) *
                                    sizeof(float);
}

Counter* Counters(void* segment) {
  return reinterpret_cast<Counter*>(static_cast<char*>(segment) + kHeaderBytes);
}
Counter& Arrived(void* segment, int rank) { return Counters(segment)[2 * rank]; }
Counter& Released(void* segment, int rank) { return Counters(segment)[2 * rank + 1]; }

bool IsShared(const Link* link) { return link->Transport() == "shared memory"; }

// Whether every rank of the ring says `yes`; collective.
Result<bool> Everyone(RingAllReduce& ring, bool yes, std::uint32_t op) {
  float vote[1] = {yes ? 1.0f : 0.0f};
  if (Status s = ring.AllReduceSum(vote, op); !s.ok()) return s;
  return vote[0] == static_cast<float>(ring.world());
}

// Rank 0 creates the segment and passes its name to the right; every other rank takes the name
// from the left, passes it on and opens the segment. An empty name says rank 0 could not.
Result<ShmMapping> ShareSegment(RingAllReduce& ring, const RingLinks& links, std::size_t floats,
                                std::size_t params, int state_vectors, Deadline deadline,
                                std::string* name) {
  const int rank = ring.rank(), world = ring.world();
  const std::size_t bytes = SegmentBytes(world, floats, params, state_vectors);
  std::array<float, kNameFloats> message{};
  Result<ShmMapping> mapping = Status::Error("no segment");
  if (rank == 0) {
    Result<std::string> fresh = RandomSegmentName();
    mapping =
        fresh.ok() ? CreateShmSegment(fresh.value(), bytes) : Result<ShmMapping>(fresh.status());
    if (mapping.ok()) {
      *name = fresh.value();
      std::memcpy(message.data(), name->data(), std::min(name->size(), sizeof message));
      auto* h = new (mapping.value().data()) HostSyncHeader{};
      h->magic = kMagic;
      h->version = kVersion;
      h->world = static_cast<std::uint32_t>(world);
      h->state_vectors = static_cast<std::uint32_t>(state_vectors);
      h->floats = floats;
      for (int r = 0; r < world; ++r) {
        new (&Arrived(h, r)) Counter{};
        new (&Released(h, r)) Counter{};
      }
    }
  } else {
    if (Status s = links.left->Recv(kSetupTag, message, deadline); !s.ok()) {
      return s;
    }
    const std::string got(reinterpret_cast<const char*>(message.data()), sizeof message);
    if (got.front() != '\0') {
      mapping = OpenShmSegment(got, bytes, /*unlink=*/false);
    } else {
      mapping = Status::Error("rank 0 could not create the segment");
    }
  }
  if (rank + 1 < world) {
    if (Status s = links.right->Send(kSetupTag, message, deadline); !s.ok()) {
      return s;
    }
  }
  if (mapping.ok()) {
    const auto* h = static_cast<const HostSyncHeader*>(mapping.value().data());
    if (h->magic != kMagic || h->version != kVersion ||
        h->world != static_cast<std::uint32_t>(world) ||
        h->state_vectors != static_cast<std::uint32_t>(state_vectors) || h->floats != floats) {
      return Status::Error("the shared segment has another layout");
    }
  }
  return mapping;
}

}  // namespace

HostSyncStrategy::HostSyncStrategy(ShmMapping segment, int rank, int world, std::size_t params,
                                   std::size_t stride, const RingLinks& links,
                                   std::unique_ptr<optim::Optimizer> optimizer, float clip_norm,
                                   std::chrono::milliseconds timeout)
    : segment_(std::move(segment)),
      header_(static_cast<HostSyncHeader*>(segment_.data())),
      rank_(rank),
      world_(world),
      params_(params),
      stride_(stride),
      gradients_(
          reinterpret_cast<float*>(static_cast<char*>(segment_.data()) + CountersBytes(world))),
      shared_params_(gradients_ + GradientsFloats(world, params + kVoteFloats)),
      own_part_(ShardRangeOf(params, world, rank)),
      left_(links.left),
      right_(links.right),
      chunks_(ShardRanges(params + kVoteFloats, world)),
      local_(std::move(optimizer), clip_norm),
      timeout_(timeout) {
  if (clip_norm > 0.0f) mean_.resize(params_);
}

std::span<float> HostSyncStrategy::GradientStorage(std::size_t floats) {
  if (floats != params_ + kVoteFloats) return {};
  return {Gradient(rank_), floats};
}

std::span<float> HostSyncStrategy::ParameterStorage(std::size_t floats) {
  if (floats != params_) return {};
  // Every replica copies the same initial state; none reads it or the parameters before all have
  // passed ParametersWritten's barrier, after their trainers wrote the same values into both.
  shared_ = true;
  optim::Optimizer& opt = *local_.LocalOptimizer();
  opt.MoveStateTo({shared_params_ + ParamsFloats(params_),
                   static_cast<std::size_t>(optim::StateVectorCount(opt.type())) * params_});
  return {shared_params_, floats};
}

Status HostSyncStrategy::Fail(int rank, Status error) {
  std::uint32_t none = 0;
  header_->failed.compare_exchange_strong(none, static_cast<std::uint32_t>(rank + 1),
                                          std::memory_order_acq_rel);
  broken_ = error;
  return error;
}

Status HostSyncStrategy::AwaitAll(bool arrived, std::uint64_t seq, std::int64_t step) {
  const auto start = Clock::now();
  const Deadline deadline = start + timeout_;
  auto next_liveness = start;
  const auto at = [step] {
    return step < 0 ? std::string("start") : "step " + std::to_string(step);
  };
  for (;;) {
    int behind = -1;
    for (int r = 0; r < world_; ++r) {
      Counter& c = arrived ? Arrived(header_, r) : Released(header_, r);
      if (c.value.load(std::memory_order_acquire) < seq) {
        behind = r;
        break;
      }
    }
    if (behind < 0) break;
    const std::uint32_t failed = header_->failed.load(std::memory_order_acquire);
    if (failed != 0) {
      broken_ = Status::Error(at() + ": rank " + std::to_string(failed - 1) + " failed");
      return broken_;
    }
    const auto now = Clock::now();
    if (now >= next_liveness) {
      next_liveness = now + kLivenessEvery;
      for (Link* link : {left_, right_}) {
        const int peer = (rank_ + (link == left_ ? world_ - 1 : 1)) % world_;
        // A neighbour that has passed this barrier owes it nothing: after the last step it may
        // end and close its links while another rank is still on its way here.
        Counter& passed = arrived ? Arrived(header_, peer) : Released(header_, peer);
        if (passed.value.load(std::memory_order_acquire) >= seq) continue;
        if (link->Readable()) {  // nothing is sent on the links now: the peer has gone
          return Fail(peer,
                      Status::Error(at() + ": closed: " + link->peer() + " closed the connection"));
        }
      }
    }
    if (now >= deadline) {
      return Fail(behind,
                  Status::Error(at() + ": timeout: rank " + std::to_string(behind) + " did not " +
                                (arrived ? "reach" : "finish") + " the step within " +
                                std::to_string(timeout_.count()) + " ms"));
    }
    if (now - start < kYieldFor) {
      ::sched_yield();
    } else {
      std::this_thread::sleep_for(kSleepSlice);
    }
  }
  stats_.wait_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  return Status::Ok();
}

void HostSyncStrategy::MeanOf(std::size_t offset, std::span<float> out) const {
  // Float i belongs to the ring's chunk c of the gradient and its vote tail (chunks_), which the
  // ring sums over ranks c, c+1, ..., c-1 in that order.
  const std::size_t n = static_cast<std::size_t>(world_);
  const float scale = 1.0f / static_cast<float>(world_);
  const std::size_t end = offset + out.size();
  for (std::size_t c = 0; c < n; ++c) {
    const std::size_t at = std::max(offset, chunks_[c].begin);
    const std::size_t chunk_end = std::min(end, chunks_[c].end);
    if (at >= chunk_end) continue;
    float* o = out.data() + (at - offset);
    const std::size_t len = chunk_end - at;
    const float* a = Gradient(static_cast<int>(c)) + at;
    const float* b = Gradient(static_cast<int>((c + 1) % n)) + at;
    if (n == 2) {
      for (std::size_t i = 0; i < len; ++i) o[i] = (a[i] + b[i]) * scale;
    } else {
      for (std::size_t i = 0; i < len; ++i) o[i] = a[i] + b[i];
    }
    for (std::size_t k = 2; k < n; ++k) {
      const float* g = Gradient(static_cast<int>((c + k) % n)) + at;
      if (k + 1 < n) {
        for (std::size_t i = 0; i < len; ++i) o[i] += g[i];
      } else {
        for (std::size_t i = 0; i < len; ++i) o[i] = (o[i] + g[i]) * scale;
      }
    }
  }
}

Status HostSyncStrategy::ParametersWritten() {
  if (!shared_) return Status::Ok();
  if (!broken_.ok()) return broken_;
  ++seq_;
  Arrived(header_, rank_).value.store(seq_, std::memory_order_release);
  const Status all = AwaitAll(/*arrived=*/true, seq_, -1);
  // Nothing is read after this barrier that another replica writes before the next one.
  Released(header_, rank_).value.store(seq_, std::memory_order_release);
  return all;
}

void HostSyncStrategy::StepOwnPart(std::span<float> params, float lr) {
  optim::Optimizer& opt = *local_.LocalOptimizer();
  if (!mean_.empty()) {
    // Clipping needs the whole mean's norm: every replica writes it out and clips it alike.
    MeanOf(0, mean_);
    optim::ClipByGlobalNorm(mean_, local_.clip_norm());
    const std::span<const float> mean(mean_);
    opt.StepPart(own_part_.begin, params.subspan(own_part_.begin, own_part_.size()),
                 mean.subspan(own_part_.begin, own_part_.size()), lr);
  } else {
    opt.StepPartFromBlocks(
        own_part_.begin, params.subspan(own_part_.begin, own_part_.size()),
        [this](std::size_t offset, std::span<float> out) { MeanOf(offset, out); }, lr);
  }
  opt.EndPartedStep();
}

Status HostSyncStrategy::Apply(std::int64_t step, std::span<float> params, std::span<float> grad,
                               float lr, const train::StepShare& share) {
  if (!broken_.ok()) return broken_;
  const auto start = Clock::now();
  float* own = Gradient(rank_);
  if (grad.data() != own) std::copy(grad.begin(), grad.end(), own);  // a caller of its own
  const float weight = train::ShareWeight(share, world_);
  if (weight != 1.0f) math::Scale(weight, {own, params_});
  votes_.Cast(std::span<float, StopVotes::kFloats>(own + params_, StopVotes::kFloats));
  std::fill(own + params_ + StopVotes::kFloats, own + params_ + kVoteFloats, 0.0f);

  ++seq_;
  Arrived(header_, rank_).value.store(seq_, std::memory_order_release);
  if (Status s = AwaitAll(/*arrived=*/true, seq_, step); !s.ok()) return s;

  std::array<float, StopVotes::kFloats> votes{};
  for (int r = 0; r < world_; ++r) {
    for (std::size_t v = 0; v < votes.size(); ++v) votes[v] += Gradient(r)[params_ + v];
  }
  agreed_ = StopVotes::Agreed(votes);

  if (shared_) {
    assert(params.data() == shared_params_ && "a trainer of shared parameters passes them");
    StepOwnPart(params, lr);
  } else if (!mean_.empty()) {
    // Clipping needs the whole mean's norm before any of it is used: write it out.
    MeanOf(0, mean_);
    if (Status s = local_.Apply(step, params, mean_, lr, share); !s.ok()) return s;
  } else {
    local_.LocalOptimizer()->StepFromBlocks(
        params, [this](std::size_t offset, std::span<float> out) { MeanOf(offset, out); }, lr);
  }

  Released(header_, rank_).value.store(seq_, std::memory_order_release);
  const Status released = AwaitAll(/*arrived=*/false, seq_, step);
  stats_.comm_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  // Each replica's gradient is offered to the others, who read it where it lies.
  stats_.bytes_sent += params_ * sizeof(float);
  stats_.bytes_received += static_cast<std::uint64_t>(world_ - 1) * params_ * sizeof(float);
  return released;
}

std::unique_ptr<train::Strategy> MakeMeanSyncStrategy(MeanCollective& mean,
                                                      std::vector<GradientBucket> buckets,
                                                      std::unique_ptr<optim::Optimizer> optimizer,
                                                      float clip_norm) {
  if (buckets.size() > 1) {
    return std::make_unique<OverlappedSyncStrategy>(mean, std::move(buckets), std::move(optimizer),
                                                    clip_norm);
  }
  return std::make_unique<SyncAllReduceStrategy>(mean, std::move(optimizer), clip_norm);
}

Result<std::unique_ptr<train::Strategy>> MakeSyncStrategy(
    RingAllReduce& ring, const RingLinks& links, std::unique_ptr<optim::Optimizer> optimizer,
    float clip_norm, std::chrono::milliseconds timeout, std::vector<GradientBucket> buckets,
    HostSharing sharing) {
  const int world = ring.world();
  const std::size_t params = optimizer->size();
  auto ring_strategy = [&] {
    return MakeMeanSyncStrategy(ring, std::move(buckets), std::move(optimizer), clip_norm);
  };
  if (world < 2 || sharing == HostSharing::kNever) return ring_strategy();
  const bool local = IsShared(links.left) && IsShared(links.right);
  Result<bool> all_local = Everyone(ring, local, kLocalOp);
  if (!all_local.ok()) return all_local.status();
  if (!all_local.value()) return ring_strategy();

  const std::size_t floats = params + HostSyncStrategy::kVoteFloats;
  std::string name;
  const int state_vectors = optim::StateVectorCount(optimizer->type());
  Result<ShmMapping> segment =
      ShareSegment(ring, links, floats, params, state_vectors, Clock::now() + timeout, &name);
  Result<bool> all_mapped = Everyone(ring, segment.ok(), kMappedOp);
  if (!name.empty()) UnlinkShmSegment(name);  // every rank has it open, or none will
  if (!all_mapped.ok()) return all_mapped.status();
  if (!all_mapped.value()) return ring_strategy();
  return std::unique_ptr<train::Strategy>(
      new HostSyncStrategy(std::move(segment).value(), ring.rank(), world, params, Stride(floats),
                           links, std::move(optimizer), clip_norm, timeout));
}

}  // namespace dtrain::dist
