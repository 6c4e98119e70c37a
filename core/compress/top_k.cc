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

// The k-th largest key (k >= 1) by a radix select, a digit at a time from the top, and how many
// of the keys equal to it belong to the k largest (the rest of the k are larger).
struct Threshold {
  std::uint32_t key = 0;
  std::size_t equal_taken = 0;
};

// A digit of a key: `width` bits from bit `shift`.
struct Digit {
  int shift = 0, width = 0;
};
// The first digit, bits 30-21 (bit 31 is 0 in every key): the exponent and the mantissa's top two
// bits, four bins an octave, so that few keys share the k-th largest's bin (a gradient's values
// spread over a few octaves); then the other 21 bits.
constexpr Digit kFirstDigit{21, 10};
constexpr std::array<Digit, 3> kLowerDigits{{{13, 8}, {5, 8}, {0, 5}}};

// The digit of the k-th largest of `keys` (k >= 1), and k's rank among the keys that have that
// digit.
struct DigitRank {
  std::uint32_t digit = 0;
  std::size_t remaining = 0;
};
template <typename Keys>
DigitRank KthLargestDigit(const Keys& keys, std::size_t count, Digit d, std::size_t k) {
  // Four histograms, one for each of four neighbours, so that runs of one digit (most of a
  // gradient shares a few exponents) do not wait on one counter's last increment.
  constexpr std::size_t kBins = std::size_t{1} << kFirstDigit.width;
  std::array<std::array<std::uint32_t, kBins>, 4> partial{};
  const std::uint32_t mask = (1u << d.width) - 1;
  std::size_t i = 0;
  for (; i + 4 <= count; i += 4) {
    for (std::size_t j = 0; j < 4; ++j) ++partial[j][(keys(i + j) >> d.shift) & mask];
  }
  for (; i < count; ++i) ++partial[0][(keys(i) >> d.shift) & mask];
  std::uint32_t digit = mask;
  for (;; --digit) {
    const std::size_t here =
        std::size_t{partial[0][digit]} + partial[1][digit] + partial[2][digit] + partial[3][digit];
    if (here >= k) break;
    k -= here;
  }
  return {digit, k};
}

// The threshold from the lower digits, among `candidates`: the keys whose first digit is the k-th
// largest key's, `remaining` its rank among them (overwritten).
Threshold LowerDigits(std::vector<std::uint32_t>& candidates, std::uint32_t first_digit,
                      std::size_t remaining) {
  std::uint32_t prefix = first_digit << kFirstDigit.shift;
  for (const Digit d : kLowerDigits) {
    const std::uint32_t mask = ~0u << (d.shift + d.width);
    std::size_t kept = 0;
    for (const std::uint32_t key : candidates) {
      if ((key & mask) == prefix) candidates[kept++] = key;
    }
    const DigitRank next =
        KthLargestDigit([&](std::size_t i) { return candidates[i]; }, kept, d, remaining);
    candidates.resize(kept);
    prefix |= next.digit << d.shift;
    remaining = next.remaining;
  }
  return {.key = prefix, .equal_taken = remaining};
}

// The k-th largest of every value's key.
Threshold KthLargestKey(std::span<const float> values, std::size_t k) {
  // The first digit over every value; the lower ones only over the keys that share the first
  // (a small share), kept aside in one pass.
  const DigitRank first = KthLargestDigit([&](std::size_t i) { return MagnitudeKey(values[i]); },
                                          values.size(), kFirstDigit, k);
  thread_local std::vector<std::uint32_t> candidates;
  candidates.clear();
  ForEachKept(
      values, [&](auto key) { return (key >> kFirstDigit.shift) == first.digit; },
      [&](std::size_t, std::uint32_t key) { candidates.push_back(key); });
  return LowerDigits(candidates, first.digit, first.remaining);
}

// The k-th largest of `keys` (k <= keys.size()); `scratch` is overwritten.
Threshold KthLargestOf(std::span<const std::uint32_t> keys, std::size_t k,
                       std::vector<std::uint32_t>& scratch) {
  const DigitRank first =
      KthLargestDigit([&](std::size_t i) { return keys[i]; }, keys.size(), kFirstDigit, k);
  scratch.clear();
  for (const std::uint32_t key : keys) {
    if ((key >> kFirstDigit.shift) == first.digit) scratch.push_back(key);
  }
  return LowerDigits(scratch, first.digit, first.remaining);
}

// A shortcut for a few of many values: a key that every value's k-th largest is likely to pass,
// the sample's (k / kSampleStride)-th largest with a margin, taken from every kSampleStride-th
// value; then every value whose key reaches it, kept with its index in one pass that skips the
// runs where none does; the k are chosen among those. It gives up (false) where fewer than k
// values reach the sample's key, which a sample unlike the rest can cause: the full select then
// runs. Either way the selection is the one the keys define.
constexpr std::size_t kSampleStride = 16;
bool SelectFromSample(std::span<const float> values, std::span<std::uint32_t> indices) {
  const std::size_t k = indices.size();
  thread_local std::vector<std::uint32_t> keys, scratch, at;
  keys.clear();
  for (std::size_t i = 0; i < values.size(); i += kSampleStride) {
    keys.push_back(MagnitudeKey(values[i]));
  }
  const std::size_t sample_k = std::min(keys.size(), 2 * (k / kSampleStride) + 32);
  const std::uint32_t bound = KthLargestOf(keys, sample_k, scratch).key;
  keys.clear();
  at.clear();
  ForEachKept(
      values, [&](auto key) { return key >= bound; },
      [&](std::size_t i, std::uint32_t key) {
        keys.push_back(key);
        at.push_back(static_cast<std::uint32_t>(i));
      });
  if (keys.size() < k) return false;
  const Threshold threshold = KthLargestOf(keys, k, scratch);
  std::size_t equal_left = threshold.equal_taken;
  std::size_t out = 0;
  for (std::size_t j = 0; j < keys.size(); ++j) {
    if (keys[j] < threshold.key) continue;
    if (keys[j] == threshold.key) {
      if (equal_left == 0) continue;
      --equal_left;
    }
    indices[out++] = at[j];
  }
  return true;
}

}  // namespace

void SelectTopK(std::span<const float> values, std::span<std::uint32_t> indices) {
  if (indices.empty()) return;
  // Many values, few taken: the sample's shortcut.
  if (values.size() >= 64 * indices.size() && values.size() >= (1u << 16) &&
      SelectFromSample(values, indices)) {
    return;
  }
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
