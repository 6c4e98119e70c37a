// bfloat16: the top 16 bits of a float32 (8 exponent bits, 7 of mantissa), rounded to nearest,
// ties to even — half the bytes of a gradient at float32's range. NaN stays NaN (quiet: its sign
// and top payload bits kept, the quiet bit set); infinities stay; floats beyond bf16's largest
// round to infinity.
//
//   std::vector<float> packed(PackedFloats(n));
//   PackBf16(values, packed);          // two bf16 values per float slot, low half first
//   float v = UnpackBf16(packed[i / 2], i % 2);  // value i
//
// Pure functions, the same bits on every CPU. The packed floats are bit patterns to move, never
// to compute on.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

namespace dtrain::compress {

// Inline, and without branches, so that the loops over gradients vectorise.
inline std::uint16_t ToBf16(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  // Adding half an ulp of bf16 less one, plus the kept part's lowest bit, rounds to nearest with
  // ties to even; infinities stay (their low half is zero), the largest floats round to infinity.
  // A NaN keeps its top bits and becomes quiet (its top mantissa bit set).
  const std::uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  const std::uint32_t nan = (bits >> 16) | 0x0040u;
  return static_cast<std::uint16_t>((bits & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
}
inline float FromBf16(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}
inline float RoundToBf16(float value) { return FromBf16(ToBf16(value)); }

// Float slots that hold `values` bf16 values.
inline std::size_t PackedFloats(std::size_t values) { return (values + 1) / 2; }
// out (PackedFloats(in.size()) floats) = in as bf16, value 2i in the low half of slot i; a last odd
// slot's high half is 0.
void PackBf16(std::span<const float> in, std::span<float> out);
// PackBf16 of m = residual + grad (error feedback: what a step did not send is added to the next),
// leaving residual = m - its bf16 value; one pass.
void PackBf16KeepingResidual(std::span<const float> grad, std::span<float> residual,
                             std::span<float> out);
// The value in the low (half 0) or high (half 1) half of a packed slot.
inline float UnpackBf16(float slot, std::size_t half) {
  return FromBf16(static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(slot) >> (16 * half)));
}

}  // namespace dtrain::compress
