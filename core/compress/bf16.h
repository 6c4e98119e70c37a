// bfloat16: the top 16 bits of a float32 (8 exponent bits, 7 of mantissa), rounded to nearest,
// ties to even — half the bytes of a gradient at float32's range. NaN stays NaN (quiet: its sign
// and top payload bits kept, the quiet bit set); infinities stay; floats beyond bf16's largest
// round to infinity.
//
//   std::vector<float> packed(PackedFloats(n));
//   PackBf16(values, packed);          // two bf16 values per float slot, low half first
//   AddUnpackedBf16(packed, 0.5f, sum);  // sum[i] += 0.5f * value i
//
// Pure functions, the same bits on every CPU. The packed floats are bit patterns to move, never
// to compute on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace dtrain::compress {

std::uint16_t ToBf16(float value);
float FromBf16(std::uint16_t bits);
inline float RoundToBf16(float value) { return FromBf16(ToBf16(value)); }

// Float slots that hold `values` bf16 values.
inline std::size_t PackedFloats(std::size_t values) { return (values + 1) / 2; }
// out (PackedFloats(in.size()) floats) = in as bf16, value 2i in the low half of slot i; a last odd
// slot's high half is 0.
void PackBf16(std::span<const float> in, std::span<float> out);
// out[i] += scale * (value i of packed), for the out.size() values packed holds.
void AddUnpackedBf16(std::span<const float> packed, float scale, std::span<float> out);

}  // namespace dtrain::compress
