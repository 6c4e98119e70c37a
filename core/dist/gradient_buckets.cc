#include "core/dist/gradient_buckets.h"

namespace dtrain::dist {

std::vector<std::size_t> LayerStarts(const model::Model& model) {
  std::vector<std::size_t> starts;
  for (std::size_t l = 0; l < model.NumLayers(); ++l) {
    if (model.layer(l).NumParams() > 0) starts.push_back(model.ParamOffset(l));
  }
  return starts;
}

std::vector<GradientBucket> PlanBuckets(std::span<const std::size_t> layer_starts,
                                        std::size_t floats, std::size_t bucket_floats) {
  std::vector<GradientBucket> plan;
  if (floats == 0) return plan;
  if (bucket_floats == 0) return {{0, floats}};
  std::size_t end = floats;
  for (std::size_t l = layer_starts.size(); l-- > 0;) {
    const std::size_t begin = layer_starts[l];
    if (begin == 0) break;  // the first layer's bucket closes the plan below
    if (end - begin >= bucket_floats) {
      plan.push_back({begin, end});
      end = begin;
    }
  }
  plan.push_back({0, end});
  return plan;
}

}  // namespace dtrain::dist
