// Gradient buckets: how an overlapped sync exchange cuts a gradient into the pieces it all-reduces
// one after another while the backward pass computes the rest (OverlappedSyncStrategy).
//
//   std::vector<GradientBucket> plan = PlanBuckets(LayerStarts(model), model.NumParams(), 1 << 20);
//   // plan[0] ends at the last float (the last layer's gradient is finished first), each next one
//   // ends where the one before it begins, and the last begins at 0.
//
// A bucket is whole layers: the ones whose gradients the pass finishes one after another, from the
// last layer back, taken until the bucket holds at least `bucket_floats` floats (the last bucket,
// from float 0, may hold fewer). The plan depends only on its arguments, so every replica of a job
// cuts the same buckets and runs the same ops. Pure functions: safe for concurrent use.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "core/model/model.h"

namespace dtrain::dist {

struct GradientBucket {
  std::size_t begin = 0;  // floats [begin, end) of the gradient
  std::size_t end = 0;

  bool operator==(const GradientBucket&) const = default;
};

// Where the model's layers with parameters start in its parameter vector, ascending.
std::vector<std::size_t> LayerStarts(const model::Model& model);

// The buckets of a gradient of `floats` floats whose layers start at `layer_starts` (ascending,
// the first 0, each below `floats`), last layer first. bucket_floats == 0: one bucket, the whole
// gradient. Empty when floats == 0.
std::vector<GradientBucket> PlanBuckets(std::span<const std::size_t> layer_starts,
                                        std::size_t floats, std::size_t bucket_floats);

}  // namespace dtrain::dist
