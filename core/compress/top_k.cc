#include "core/compress/top_k.h"

#include <array>
#include <bit>
#include <cmath>

namespace dtrain::compress {
namespace {

// |value| as an unsigned key that orders like the magnitude: a float's bits without the sign
// grow with its magnitude; every NaN gets one key above infinity's.
std::uint32_t MagnitudeKey(float value) {
  constexpr std::uint32_t kNanKey = 0x7FC00000u;
  if (std::isnan(value)) return kNanKey;
  return std::bit_cast<std::uint32_t>(value) & 0x7FFFFFFFu;
}

// The k-th largest key (k >= 1) by a radix select, a byte at a time from the top, and how many of
// the keys equal to it belong to the k largest (the rest of the k are larger).
struct Threshold {
  std::uint32_t key = 0;
  std::size_t equal_taken = 0;
};

Threshold KthLargestKey(std::span<const float> values, std::size_t k) {
  std::uint32_t prefix = 0;       // the threshold's bits found so far
  std::uint32_t prefix_mask = 0;  // which bits those are
  std::size_t remaining = k;      // rank of the threshold among the keys that share the prefix
  for (int shift = 24; shift >= 0; shift -= 8) {
    std::array<std::size_t, 256> counts{};
    for (const float v : values) {
      const std::uint32_t key = MagnitudeKey(v);
      if ((key & prefix_mask) == prefix) ++counts[(key >> shift) & 0xFFu];
    }
    std::uint32_t byte = 255;
    while (counts[byte] < remaining) remaining -= counts[byte--];
    prefix |= byte << shift;
    prefix_mask |= 0xFFu << shift;
  }
  return {.key = prefix, .equal_taken = remaining};
}

}  // namespace

void SelectTopK(std::span<const float> values, std::span<std::uint32_t> indices) {
  if (indices.empty()) return;
  const Threshold threshold = KthLargestKey(values, indices.size());
  std::size_t equal_left = threshold.equal_taken;
  std::size_t out = 0;
  for (std::size_t i = 0; i < values.size() && out < indices.size(); ++i) {
    const std::uint32_t key = MagnitudeKey(values[i]);
    const bool equal_taken = key == threshold.key && equal_left > 0;
    if (key > threshold.key || equal_taken) {
      indices[out++] = static_cast<std::uint32_t>(i);
      if (equal_taken) --equal_left;
    }
  }
}

void WriteSparse(std::span<const float> values, std::span<const std::uint32_t> indices,
                 std::span<float> message) {
  const std::size_t k = indices.size();
  for (std::size_t j = 0; j < k; ++j) {
    message[j] = std::bit_cast<float>(indices[j]);
    message[k + j] = values[indices[j]];
  }
}

void AddSparse(std::span<const float> message, std::size_t k, float scale, std::span<float> out) {
  for (std::size_t j = 0; j < k; ++j) {
    const std::uint32_t index = std::bit_cast<std::uint32_t>(message[j]);
    if (index < out.size()) out[index] += scale * message[k + j];
  }
}

}  // namespace dtrain::compress
