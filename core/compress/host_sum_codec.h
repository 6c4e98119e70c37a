// HostSumCodec: the ChunkCodec of a compressor's gather of host sums (GradientCompressor under
// bf16 or topk, over two levels) for one part of its plan: the range of the part's tensors, whose
// chunks go tensor piece by tensor piece (a chunk's floats of each tensor it meets), each piece's
// message after the one before: raw and bf16 pieces as their tensors go, a sparse tensor's piece
// by its own top k (SparseValues of the piece). Encode adds this replica's residual of the chunk to
// the host's sum and keeps there what the message leaves out. Made with `fold`, BeforeSum moves
// what the residual holds outside the chunk into this replica's data (after a restore, or the
// first exchange: later the residual lies in the chunk alone).
//
//   HostSumCodec codec(plan_part, settings.fraction, 1.0f / world, residual, scratch, seconds,
//                      /*fold=*/first);
//   Status s = exchange.GatherHostSums(range, codec);
//   codec.encoded_floats();   // what this replica sent across hosts
//
// The codec holds references: the plan, residual, scratch and seconds must outlive it. Encode and
// Decode add their time to `seconds`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/compress/chunk_codec.h"
#include "core/compress/compression_plan.h"
#include "core/compress/value_messages.h"

namespace dtrain::compress {

class HostSumCodec final : public ChunkCodec {
 public:
  // `plan`: the part's tensors, contiguous; `residual`: the whole gradient's (PlanFloats floats of
  // the compressor's plan), indexed by the tensors' offsets.
  HostSumCodec(std::span<const TensorPlan> plan, double fraction, float inverse_world,
               std::span<float> residual, std::vector<std::uint32_t>& scratch, double& seconds,
               bool fold);

  void BeforeSum(std::span<float> data, math::PartRange chunk) override;
  std::size_t MessageFloats(math::PartRange chunk) const override;
  void Encode(std::span<const float> sum, math::PartRange chunk, std::span<float> message) override;
  void Decode(std::span<const float> messages, std::size_t stride, std::size_t hosts,
              math::PartRange chunk, std::span<float> out) override;

  // The floats of the message Encode wrote (0 before it).
  std::size_t encoded_floats() const { return encoded_floats_; }

 private:
  // visit(tensor, piece in the range's floats, the piece's message size, its offset in the
  // message) for each tensor the chunk meets, in plan order.
  template <typename Visit>
  void ForEachPiece(math::PartRange chunk, Visit visit) const;

  std::span<const TensorPlan> plan_;
  std::size_t begin_;  // the range's first float in the gradient
  double fraction_;
  float inverse_world_;
  std::span<float> residual_;
  std::vector<std::uint32_t>& scratch_;
  double& seconds_;
  bool fold_;
  std::size_t encoded_floats_ = 0;
};

}  // namespace dtrain::compress
