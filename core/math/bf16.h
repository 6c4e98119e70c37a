// bfloat16: the top 16 bits of a float32 (8 exponent bits, 7 of mantissa), rounded to nearest,
// ties to even — half the bytes of a float at float32's range. NaN stays NaN (quiet: its sign and
// top payload bits kept, the quiet bit set); infinities stay; floats beyond bf16's largest round
// to infinity; subnormals round like any other value (no flush to zero).
//
//   std::uint16_t b = ToBf16(x);                        // one value
//   ToBf16Rows(a, rows, cols, lda, packed.data());      // a row-major block, densely
//
// The one rounding to bf16 in dtrain: gradient compression's wire values (core/compress/bf16.h)
// and train.precision = "bf16"'s matrix-product inputs (gemm.h) are the same bits. Pure functions,
// the same bits on every CPU.
#pragma once

#include <bit>
#include <cstdint>

namespace dtrain::math {

// Inline, and without branches, so that the loops over arrays vectorise.
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

// out[r * cols + c] = ToBf16(in[r * ld + c]) for a row-major block of rows x cols (ld >= cols):
// the block made dense. Runs 512 bits at a time where the CPU has AVX-512 (the bits are ToBf16's
// either way).
void ToBf16Rows(const float* in, int rows, int cols, int ld, std::uint16_t* out);

}  // namespace dtrain::math
