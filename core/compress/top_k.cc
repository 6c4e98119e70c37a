#include "core/compress/top_k.h"

#include <array>
#include <bit>
#include <cstring>
#include <vector>

namespace dtrain::compress {
namespace {

// |value| as an unsigned key that orders like the magnitude: a float's bits without the sign
// grow with its magnitude; every NaN gets one key above infinity's. No branch: the same
// expression serves one value and a vector of four (Keys).
constexpr std::uint32_t kNanKey = 0x7FC00000u;
template <typename Bits>
Bits MagnitudeKeyOf(Bits bits) {
  const Bits key = bits & 0x7FFFFFFFu;
  return key > 0x7F800000u ? kNanKey : key;
}
std::uint32_t MagnitudeKey(float value) {
  return MagnitudeKeyOf(std::bit_cast<std::uint32_t>(value));
}

// Four keys side by side: one SSE register, so operations on them are vector instructions.
using Keys = std::uint32_t __attribute__((vector_size(16)));

// take(i, key) for each value i, in order, whose key passes keep (a function of a key, or of
// Keys giving a lane mask); runs of kRun values are first tested four at a time, and a run that
// none of passes is skipped.
template <typename Keep, typename Take>
void ForEachKept(std::span<const float> values, const Keep& keep, const Take& take) {
  constexpr std::size_t kRun = 16;
  std::size_t i = 0;
  for (; i + kRun <= values.size(); i += kRun) {
    Keys any{};
    for (std::size_t at = 0; at < kRun; at += 4) {
      Keys bits;
      std::memcpy(&bits, &values[i + at], sizeof bits);
      any |= reinterpret_cast<Keys>(keep(MagnitudeKeyOf(bits)));
    }
    if ((any[0] | any[1] | any[2] | any[3]) == 0) continue;
    for (std::size_t l = 0; l < kRun; ++l) {
      const std::uint32_t key = MagnitudeKey(values[i + l]);
      if (keep(key)) take(i + l, key);
    }
  }
  for (; i < values.size(); ++i) {
    const std::uint32_t key = MagnitudeKey(values[i]);
    if (keep(key)) take(i, key);
  }
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
  // Four histograms, one for each of four neighbours, so that runs of one byte (most of a
  // gradient shares a few exponents) do not wait on one counter's last increment.
  std::array<std::array<std::size_t, 256>, 4> partial{};
  std::size_t i = 0;
  for (; i + 4 <= count; i += 4) {
    for (std::size_t j = 0; j < 4; ++j) ++partial[j][(keys(i + j) >> shift) & 0xFFu];
  }
  for (; i < count; ++i) ++partial[0][(keys(i) >> shift) & 0xFFu];
  std::array<std::size_t, 256> counts{};
  for (std::size_t b = 0; b < 256; ++b) {
    counts[b] = partial[0][b] + partial[1][b] + partial[2][b] + partial[3][b];
  }
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
  ForEachKept(
      values, [&](auto key) { return (key >> 24) == top.byte; },
      [&](std::size_t, std::uint32_t key) { candidates.push_back(key); });
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
  ForEachKept(
      values, [&](auto key) { return key >= threshold.key; },
      [&](std::size_t i, std::uint32_t key) {
        if (key == threshold.key) {
          if (equal_left == 0) return;
          --equal_left;
        }
        indices[out++] = static_cast<std::uint32_t>(i);
      });
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
