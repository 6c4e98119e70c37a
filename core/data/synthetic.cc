// MakeBlobs and MakeLinearTeacher: synthetic data sets, pure functions of their options.
#include <cassert>
#include <cmath>
#include <vector>

#include "core/data/random.h"
#include "core/data/readers.h"

namespace dtrain::data {
namespace {

// Stream ids, so the two generators never share a random sequence for the same seed.
constexpr std::uint64_t kBlobsStream = 0x626C6F6273ULL;        // "blobs"
constexpr std::uint64_t kTeacherStream = 0x74656163686572ULL;  // "teacher"
constexpr double kCentreBox = 5.0;  // blob centres lie in [-kCentreBox, kCentreBox]^features

}  // namespace

Dataset MakeBlobs(const BlobsOptions& o) {
  assert(o.classes > 0);
  SplitMix64 rng(MixSeed(o.seed, kBlobsStream));
  const auto classes = static_cast<std::size_t>(o.classes);
  std::vector<double> centres(classes * o.features);
  for (double& c : centres) c = kCentreBox * (2.0 * rng.Uniform() - 1.0);

  Dataset d;
  d.rows = o.rows;
  d.features = o.features;
  d.floats.resize(o.rows * o.features);
  d.labels.resize(o.rows);
  d.num_classes = o.classes;
  d.source = "synthetic:blobs";
  for (std::size_t r = 0; r < o.rows; ++r) {
    const std::uint32_t label = rng.Bounded(static_cast<std::uint32_t>(classes));
    d.labels[r] = static_cast<float>(label);
    const double* centre = centres.data() + label * o.features;
    float* row = d.floats.data() + r * o.features;
    for (std::size_t j = 0; j < o.features; ++j) {
      row[j] = static_cast<float>(centre[j] + o.spread * rng.Normal());
    }
  }
  return d;
}

Dataset MakeLinearTeacher(const TeacherOptions& o) {
  SplitMix64 rng(MixSeed(o.seed, kTeacherStream));
  std::vector<double> weights(o.features);
  const double weight_scale =
      o.features > 0 ? 1.0 / std::sqrt(static_cast<double>(o.features)) : 0.0;
  for (double& w : weights) w = weight_scale * rng.Normal();
  const double bias = rng.Normal();

  Dataset d;
  d.rows = o.rows;
  d.features = o.features;
  d.floats.resize(o.rows * o.features);
  d.labels.resize(o.rows);
  d.num_classes = 0;
  d.source = "synthetic:teacher";
  for (std::size_t r = 0; r < o.rows; ++r) {
    float* row = d.floats.data() + r * o.features;
    double y = bias;
    for (std::size_t j = 0; j < o.features; ++j) {
      row[j] = static_cast<float>(rng.Normal());
      y += weights[j] * row[j];
    }
    d.labels[r] = static_cast<float>(y + o.noise * rng.Normal());
  }
  return d;
}

}  // namespace dtrain::data
