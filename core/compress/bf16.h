// bfloat16 values packed two to a float slot, for gradients on the wire: half the bytes at
// float32's range, rounded as math::ToBf16 rounds (nearest, ties to even; NaN, infinities kept).
//
//   std::vector<float> packed(PackedFloats(n));
//   PackBf16(values, packed);          // two bf16 values per float slot, low half first
//   float v = UnpackBf16(packed[i / 2], i % 2);  // value i
//
// Pure functions, the same bits on every CPU (the loops run at the CPU's vector width). The packed
// floats are bit patterns to move, never to compute on.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/math/bf16.h"

namespace dtrain::compress {

// The rounding is math::ToBf16's (core/math/bf16.h): the one rounding to bf16 in dtrain.
using math::FromBf16;
using math::RoundToBf16;
using math::ToBf16;

// Float slots that hold `values` bf16 values.
inline std::size_t PackedFloats(std::size_t values) { return (values + 1) / 2; }
// out (PackedFloats(in.size()) floats) = in as bf16, value 2i in the low half of slot i; a last odd
// slot's high half is 0.
void PackBf16(std::span<const float> in, std::span<float> out);
// PackBf16 of m = residual + grad (error feedback: what a step did not send is added to the next),
// leaving residual = m - its bf16 value; one pass.
void PackBf16KeepingResidual(std::span<const float> grad, std::span<float> residual,
                             std::span<float> out);
// out[i] = value i of `packed` (PackedFloats(out.size()) slots) for every i < out.size().
void UnpackBf16(std::span<const float> packed, std::span<float> out);
// sums[i] += value i of `packed` (PackedFloats(sums.size()) slots) for every i < sums.size().
void AddUnpackedBf16(std::span<const float> packed, std::span<float> sums);
// The value in the low (half 0) or high (half 1) half of a packed slot.
inline float UnpackBf16(float slot, std::size_t half) {
  return FromBf16(static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(slot) >> (16 * half)));
}

}  // namespace dtrain::compress
