#include "core/data/augment.h"

#include <algorithm>
#include <cstddef>

#include "core/data/random.h"

namespace dtrain::data {

void AugmentBatch(const AugmentOptions& options, ImageShape shape, float* x, int rows,
                  std::uint64_t seed, float* scratch) {
  if (!options.enabled()) return;
  const int c = shape.channels, h = shape.height, w = shape.width;
  const std::size_t pixels = static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
  const std::size_t size = pixels * static_cast<std::size_t>(c);
  const int p = options.crop_padding;
  for (int r = 0; r < rows; ++r) {
    SplitMix64 rng(MixSeed(seed, static_cast<std::uint64_t>(r)));
    // Drawn in a fixed order, whatever is enabled, so each option's draw is the same.
    const int dy = static_cast<int>(rng.Bounded(static_cast<std::uint32_t>(2 * p + 1))) - p;
    const int dx = static_cast<int>(rng.Bounded(static_cast<std::uint32_t>(2 * p + 1))) - p;
    const bool flip = options.flip && rng.Bounded(2) == 1;
    if (dy == 0 && dx == 0 && !flip) continue;
    float* image = x + static_cast<std::size_t>(r) * size;
    std::copy(image, image + size, scratch);
    // Output pixel (i, j) shows input pixel (i + dy, j' + dx), j' = j or its mirror.
    for (int i = 0; i < h; ++i) {
      for (int j = 0; j < w; ++j) {
        const int si = i + dy;
        const int sj = (flip ? w - 1 - j : j) + dx;
        float* out = image + (static_cast<std::size_t>(i) * w + j) * c;
        if (si < 0 || si >= h || sj < 0 || sj >= w) {
          std::fill(out, out + c, 0.0f);
        } else {
          const float* in = scratch + (static_cast<std::size_t>(si) * w + sj) * c;
          std::copy(in, in + c, out);
        }
      }
    }
  }
}

}  // namespace dtrain::data
