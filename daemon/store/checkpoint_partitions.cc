#include "daemon/store/checkpoint_partitions.h"

#include <span>

#include "core/model/partition_plan.h"

namespace dtrain::store {
namespace {

// The model and its plan for checkpoint `c`, whose vectors must all have the model's size.
struct Layout {
  model::Model model;
  model::PartitionPlan plan;
};

Result<Layout> LayoutOf(const config::ClusterConfig& cluster, const CheckpointData& c) {
  Result<model::ModelSpec> spec = model::ParseModelSpec(c.model_spec);
  if (!spec.ok()) return spec.status();
  Result<model::PartitionPlan> plan =
      model::PlanPartitions(spec.value(), cluster.partition, cluster.model_parallel);
  if (!plan.ok()) return plan.status();
  Layout layout{model::Model(spec.value()), std::move(plan).value()};
  const std::size_t size = layout.plan.offset.back();
  bool fits = c.params.size() == size;
  for (const math::FloatBuffer& v : c.optimizer_state) fits = fits && v.size() == size;
  if (!fits) {
    return Status::Error("the checkpoint at step " + std::to_string(c.step) + " holds " +
                         std::to_string(c.params.size()) + " parameters (or optimizer state of "
                         "another size), the model has " + std::to_string(size));
  }
  return layout;
}

// Applies `convert` (ToModelLayout or FromModelLayout) to params and every state vector.
template <typename Convert>
void Relayout(const Layout& layout, CheckpointData& c, Convert convert) {
  math::FloatBuffer out(c.params.size());
  convert(layout.plan, layout.model, std::span<const float>(c.params), std::span<float>(out));
  c.params.swap(out);
  for (math::FloatBuffer& v : c.optimizer_state) {
    convert(layout.plan, layout.model, std::span<const float>(v), std::span<float>(out));
    v.swap(out);
  }
}

}  // namespace

Result<CheckpointData> JoinPartitionCheckpoints(const config::ClusterConfig& cluster,
                                                std::vector<CheckpointData> parts) {
  Result<CheckpointData> whole = MergeCheckpointParts(std::move(parts));
  if (!whole.ok() || cluster.model_parallel == 1) return whole;
  Result<Layout> layout = LayoutOf(cluster, whole.value());
  if (!layout.ok()) return layout.status();
  Relayout(layout.value(), whole.value(), model::ToModelLayout);
  return whole;
}

Result<std::vector<std::string>> SplitPartitionCheckpoint(const config::ClusterConfig& cluster,
                                                          const CheckpointData& whole) {
  if (cluster.model_parallel == 1) return std::vector<std::string>{EncodeCheckpoint(whole)};
  Result<Layout> layout = LayoutOf(cluster, whole);
  if (!layout.ok()) return layout.status();
  CheckpointData partitioned = whole;
  Relayout(layout.value(), partitioned, model::FromModelLayout);
  std::vector<std::string> blobs;
  const auto shards = static_cast<std::size_t>(cluster.Servers());
  for (int p = 0; p < cluster.model_parallel; ++p) {
    const auto k = static_cast<std::size_t>(p);
    blobs.push_back(EncodeCheckpoint(SliceCheckpoint(partitioned, layout.value().plan.offset[k],
                                                     layout.value().plan.offset[k + 1],
                                                     k * shards, shards)));
  }
  return blobs;
}

}  // namespace dtrain::store
