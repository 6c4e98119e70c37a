#include "core/compress/bf16.h"

#include <bit>
#include <cmath>

namespace dtrain::compress {
namespace {

constexpr std::uint16_t kQuietBit = 0x0040;  // the top mantissa bit of a bf16 NaN

std::uint16_t LowHalf(float slot) {
  return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(slot));
}
std::uint16_t HighHalf(float slot) {
  return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(slot) >> 16);
}

}  // namespace

std::uint16_t ToBf16(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  if (std::isnan(value)) return static_cast<std::uint16_t>((bits >> 16) | kQuietBit);
  // Adding half an ulp of bf16 less one, plus the kept part's lowest bit, rounds to nearest with
  // ties to even; infinities stay (their low half is zero), the largest floats round to infinity.
  const std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

float FromBf16(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

void PackBf16(std::span<const float> in, std::span<float> out) {
  for (std::size_t slot = 0; slot < PackedFloats(in.size()); ++slot) {
    const std::uint32_t low = ToBf16(in[2 * slot]);
    const std::uint32_t high = 2 * slot + 1 < in.size() ? ToBf16(in[2 * slot + 1]) : 0u;
    out[slot] = std::bit_cast<float>(low | (high << 16));
  }
}

void AddUnpackedBf16(std::span<const float> packed, float scale, std::span<float> out) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    const float slot = packed[i / 2];
    out[i] += scale * FromBf16(i % 2 == 0 ? LowHalf(slot) : HighHalf(slot));
  }
}

}  // namespace dtrain::compress
