#include "core/compress/top_k.h"

#include <array>
#include <bit>
#include <vector>

namespace dtrain::compress {
namespace {

// |value| as an unsigned key that orders like the magnitude: a float's bits without the sign
// grow with its magnitude; every NaN gets one key above infinity's. No branch: loops vectorise.
std::uint32_t MagnitudeKey(float value) {
  constexpr std::uint32_t kNanKey = 0x7FC00000u;
  const std::uint32_t key = std::bit_cast<std::uint32_t>(value) & 0x7FFFFFFFu;
  return key > 0x7F800000u ? kNanKey : key;
}

// The k-th largest key (k >= 1) by a radix select, a byte at a time from the top, and how many of
// the keys equal to it belong to the k largest (the rest of the k are larger).
struct Threshold {
  std::uint32_t key = 0;
  std::size_t equal_taken = 0;
};

// The byte at `shift` of the k-th largest of `keys` (k >= 1), and k's rank among the keys that
// have that byte there.
struct ByteRank {
  std::uint32_t byte = 0;
  std::size_t remaining = 0;
};
template <typename Keys>
ByteRank KthLargestByte(const Keys& keys, std::size_t count, int shift, std::size_t k) {
  std::array<std::size_t, 256> counts{};
  for (std::size_t i = 0; i < count; ++i) ++counts[(keys(i) >> shift) & 0xFFu];
  std::uint32_t byte = 255;
  while (counts[byte] < k) k -= counts[byte--];
  return {byte, k};
}

Threshold KthLargestKey(std::span<const float> values, std::size_t k) {
  // The top byte over every value; the lower bytes only over the keys that share the top one
  // (usually a small share), kept aside in one pass.
  const ByteRank top =
      KthLargestByte([&](std::size_t i) { return MagnitudeKey(values[i]); }, values.size(), 24, k);
  thread_local std::vector<std::uint32_t> candidates;
  candidates.clear();
  for (const float v : values) {
    const std::uint32_t key = MagnitudeKey(v);
    if ((key >> 24) == top.byte) candidates.push_back(key);
  }
  std::uint32_t prefix = top.byte << 24;
  std::size_t remaining = top.remaining;
  for (int shift = 16; shift >= 0; shift -= 8) {
    const std::uint32_t mask = ~0u << (shift + 8);
    std::size_t kept = 0;
    for (const std::uint32_t key : candidates) {
      if ((key & mask) == prefix) candidates[kept++] = key;
    }
    const ByteRank next =
        KthLargestByte([&](std::size_t i) { return candidates[i]; }, kept, shift, remaining);
    candidates.resize(kept);
    prefix |= next.byte << shift;
    remaining = next.remaining;
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
