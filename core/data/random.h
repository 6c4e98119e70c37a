// SplitMix64: the small, fully specified random generator behind every shuffle, split and
// synthetic data set in core/data, so results are identical across standard libraries.
//
//   SplitMix64 rng(MixSeed(seed, epoch));
//   std::uint32_t j = rng.Bounded(n);   // uniform in [0, n)
//
// Every draw is defined here (no <random> distributions), so a seed means the same numbers on
// every platform. A generator is a plain value: one thread at a time.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace dtrain::data {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

  std::uint64_t Next() {
    state_ += 0x9E3779B97F4A7C15ULL;
    return Finalize(state_);
  }

  // Uniform in [0, bound), unbiased (Lemire's multiply-shift with rejection). bound > 0.
  std::uint32_t Bounded(std::uint32_t bound) {
    std::uint64_t product = (Next() >> 32) * bound;
    auto low = static_cast<std::uint32_t>(product);
    if (low < bound) {
      const std::uint32_t threshold = static_cast<std::uint32_t>(-bound) % bound;
      while (low < threshold) {
        product = (Next() >> 32) * bound;
        low = static_cast<std::uint32_t>(product);
      }
    }
    return static_cast<std::uint32_t>(product >> 32);
  }

  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // Standard normal (Box–Muller; the second value of each pair is discarded to keep no state).
  double Normal() {
    const double u1 = 1.0 - Uniform();  // (0, 1]: the logarithm stays finite
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

  // The SplitMix64 output function: a bijective 64-bit mixer.
  static std::uint64_t Finalize(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_;
};

// A seed for an independent stream (an epoch, the validation split, ...) derived from a base seed.
inline std::uint64_t MixSeed(std::uint64_t seed, std::uint64_t stream) {
  return SplitMix64::Finalize(seed ^ SplitMix64::Finalize(stream + 0x632BE59BD9B4E019ULL));
}

}  // namespace dtrain::data
