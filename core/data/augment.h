// Image augmentation applied to a training batch after it is gathered and scaled: a random
// crop with zero padding (the image shifted by up to `crop_padding` pixels each way, the
// uncovered border zero) and a random horizontal flip.
//
//   AugmentOptions a{.crop_padding = 4, .flip = true};
//   AugmentBatch(a, {.channels = 1, .height = 28, .width = 28}, x, rows, seed, scratch);
//
// Images are rows of x in height, width, channel order (model::Shape's layout). Row r's
// transformation is a pure function of (seed, r), so a trainer that passes a seed of (run
// seed, replica, step) repeats a run exactly. Pure function of its arguments; `scratch` holds
// one image.
#pragma once

#include <cstdint>

namespace dtrain::data {

struct AugmentOptions {
  int crop_padding = 0;  // pixels; 0: no crop
  bool flip = false;     // mirror left-right with probability 1/2

  bool enabled() const { return crop_padding > 0 || flip; }
  bool operator==(const AugmentOptions&) const = default;
};

struct ImageShape {
  int channels = 1, height = 0, width = 0;
};

void AugmentBatch(const AugmentOptions& options, ImageShape shape, float* x, int rows,
                  std::uint64_t seed, float* scratch);

}  // namespace dtrain::data
