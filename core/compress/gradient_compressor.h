// GradientCompressor: one replica's side of a compressed synchronous gradient exchange, with
// error feedback — what it did not send of a gradient is kept and added to the next one, so
// nothing is lost, only late (Seide et al. 2014; PowerSGD; Deep Gradient Compression).
//
//   GradientCompressor c(PlanCompression(model.Tensors(), settings), settings, seed);
//   Status s = c.Exchange(step, grad, exchange);  // grad: this replica's in, the mean out
//
// A step, by the plan's encodings, for this replica's gradient G and residual E (M = G + E):
//   kRaw      M's values go as they are (no residual);
//   kLowRank  PowerSGD: P = M Q, averaged; P made orthonormal; Q' = M^T P, averaged into the
//             next step's Q (warm start); the step's gradient is P Q'^T; E = M - P (M^T P)^T,
//             whose subtraction waits for the next step's pass over M (one pass fewer a step;
//             StateVectors() does it first, with the same bits);
//   kSparse   the k values of largest |M| with their indices; E = M without them; the mean is
//             the sum of every replica's pairs, in rank order, times 1/world;
//   kBf16     M rounded to bfloat16; E = M - that; the mean is the sum of every replica's
//             values, in rank order, times 1/world.
// Ops per step: powersgd two Means (P and raw tensors, then Q, where there are factors); topk and
// bf16 one Gather (raw tensors travel inside it, summed like the rest); none, and any step <
// warmup_steps, one Mean of the whole gradient (the residual untouched).
//
// Two levels (exchange.SumsWithinHost(): several replicas on each of several hosts): topk and bf16
// instead compress each host's float32 sum once (GatherHostSums, compress/chunk_codec.h), so the
// network carries what one replica per host would send. The replica at local index i encodes
// chunk i of its host's sum, tensor piece by tensor piece (the chunk's floats of each tensor it
// meets): raw and bf16 as their tensors, a sparse tensor's piece by its own top k, max(1,
// ceil(fraction * piece)) values; its residual of that chunk is the host's error feedback, and the
// rest of its residual is folded into the host's sum once (after construction or StateVectors).
// The mean is the hosts' decoded messages summed in host order, times 1/world. The result is the
// same bits on every replica. No allocation after the first compressed step. stats() counts
// compressed steps only.
//
// Parts (overlap: OverlappedSyncStrategy exchanges the buckets of a gradient while the backward
// pass computes the rest): ExchangePart does a step's work for some of the plan's tensors only,
// with their residual and Qs, leaving the other floats of grad unread. Each tensor's result
// depends only on its own values and each method's sums are value by value, so exchanging every
// part of the plan once per step, in any order, gives the whole exchange's values (the bits where
// the collective's sums do not depend on the buffers' layout: a two-replica ring, a Gather), and
// the state stays the one of the whole plan (StateVectors), whatever the parts.
//
// Invariant (error feedback conserves the gradient): over any steps, the sum of what this
// replica sent, decompressed, plus its residual equals the sum of its gradients, to rounding.
//
// One thread at a time calls it. The plan's tensors must tile [0, PlanFloats) in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/compress/chunk_codec.h"
#include "core/compress/compression_plan.h"
#include "core/status.h"

namespace dtrain::math {
class ThreadTeam;
}

namespace dtrain::compress {

// What a compressor needs from the replicas' collective (the sync strategy wraps its ring in
// one). Every replica makes the same calls with the same sizes.
class GradientExchange {
 public:
  virtual ~GradientExchange() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  // data = the mean over replicas of each one's data; the same bits on every replica.
  virtual Status Mean(std::span<float> data) = 0;
  // blocks holds world() blocks of equal size, this replica's own at block rank(); afterwards
  // block r is replica r's.
  virtual Status Gather(std::span<float> blocks) = 0;
  // Whether GatherHostSums runs: the replicas run on several hosts, several on each.
  virtual bool SumsWithinHost() const { return false; }
  // data = the mean over replicas of each one's data, through `codec` (see ChunkCodec): summed
  // within each host, each host's sum encoded in chunks, gathered across hosts, decoded.
  virtual Status GatherHostSums(std::span<float> data, ChunkCodec& codec);
};

// Tensors [first, first + count) of a plan: a part exchanged on its own (ExchangePart).
struct PlanPart {
  std::size_t first = 0;
  std::size_t count = 0;
  bool operator==(const PlanPart&) const = default;
};

// The part of `plan` whose tensors tile floats [begin, end) of the gradient, or an error where
// [begin, end) cuts a tensor (a plan's tensors tile [0, PlanFloats) in order).
Result<PlanPart> PartOf(std::span<const TensorPlan> plan, std::size_t begin, std::size_t end);

// Cumulative costs, for per-worker metrics.
struct CompressionStats {
  double seconds = 0.0;          // encoding and decoding, not the exchange
  std::uint64_t raw_bytes = 0;   // the gradients' own size, over the compressed steps
  std::uint64_t sent_bytes = 0;  // what this replica contributed instead (PlanSentFloats * 4)
};

// A kLowRank tensor's last P (rows x rank) and this replica's own Q' (cols x rank): while
// pending, the residual still holds M, and E = M - P own_q^T.
struct DeferredFactors {
  std::vector<float> p, own_q;
  bool pending = false;
};

class GradientCompressor {
 public:
  // `seed` gives PowerSGD's initial Q (the same on every replica).
  GradientCompressor(std::vector<TensorPlan> plan, const Settings& settings, std::uint64_t seed);

  // grad (PlanFloats floats): this replica's gradient, already weighted for averaging; becomes
  // the step's averaged gradient (see above). On failure grad and the residual hold unspecified
  // values.
  Status Exchange(std::int64_t step, std::span<float> grad, GradientExchange& exchange);
  // As Exchange, for the plan's tensors `part` of grad (the whole gradient, PlanFloats floats)
  // only: their ops (the same kinds as a whole step's), residual and Qs. Floats outside the part
  // are neither read nor written (another thread may be writing them).
  Status ExchangePart(std::int64_t step, std::span<float> grad, PlanPart part,
                      GradientExchange& exchange);

  // Without an exchange (a worker's pushes to parameter servers): messages (PlanSentFloats
  // floats) = this replica's message of each tensor, in plan order, from grad plus its residual,
  // keeping in the residual what they leave out — a kSparse tensor's k indices (their bits) then
  // its k values, a kBf16 tensor's values packed two to a float, a kRaw tensor's values. No
  // kLowRank tensors (PowerSGD's factors are summed by Means). Its seconds count in stats().
  void Encode(std::span<const float> grad, std::span<float> messages);

  // The state a checkpoint keeps for an exact resume: this replica's residual (PlanFloats
  // floats), then PowerSGD's Q of each kLowRank tensor in plan order (the same on every
  // replica). Sizes depend only on the plan; the caller may overwrite them to restore. It first
  // completes the residual (the deferred subtraction above), so the spans hold the whole state
  // until the next Exchange.
  std::vector<std::span<float>> StateVectors();

  // PowerSGD's passes over its matrices from now on split among the team's threads (M's rows,
  // or Q's for M^T P), with the bits one thread gives. The team must outlive the compressor and
  // be free whenever Exchange runs.
  void ShareThreads(math::ThreadTeam& team) { team_ = &team; }

  const std::vector<TensorPlan>& plan() const { return plan_; }
  const Settings& settings() const { return settings_; }
  const CompressionStats& stats() const { return stats_; }

 private:
  // The exchanges of a compressed step: PowerSGD's two Means, or topk's and bf16's one Gather.
  Status ExchangeLowRank(PlanPart part, std::span<float> grad, GradientExchange& exchange);
  Status ExchangeGathered(PlanPart part, std::span<float> grad, GradientExchange& exchange);
  // topk's and bf16's step over two levels: the host's sum compressed once (see above).
  Status ExchangeHostSums(PlanPart part, std::span<float> grad, GradientExchange& exchange);
  // The part's tensors of the plan.
  std::span<const TensorPlan> Tensors(PlanPart part) const {
    return std::span(plan_).subspan(part.first, part.count);
  }
  // Encode's messages for the part's tensors only.
  void EncodePart(PlanPart part, std::span<const float> grad, std::span<float> messages);

  std::vector<TensorPlan> plan_;
  Settings settings_;
  std::vector<float> residual_;
  std::vector<std::vector<float>> q_;  // per kLowRank tensor, in plan order
  // Per kLowRank tensor, in plan order: the last step's P and own Q', not yet taken from M.
  std::vector<DeferredFactors> deferred_;
  std::vector<float> buffer_;          // the messages of a step
  std::vector<std::uint32_t> top_k_;   // a kSparse tensor's selection
  // Per part, by its first tensor: whether its residual lies in this replica's chunks of host
  // sums only (ExchangeHostSums has folded the rest into a host's sum since StateVectors).
  std::vector<bool> host_chunks_only_;
  math::ThreadTeam* team_ = nullptr;   // null: every pass on the calling thread
  CompressionStats stats_;
};

}  // namespace dtrain::compress
