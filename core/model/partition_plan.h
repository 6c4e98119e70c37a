// PartitionPlan: how one model replica is split over K processes (model parallelism, as in
// DistBelief): which layers ("layers", a pipeline of consecutive layers balanced by parameter
// count) or which output units of every layer ("tensor", each dense layer's units split K ways)
// each partition holds, and where its parameters sit in the replica's parameter vector.
//
//   Result<PartitionPlan> plan = PlanPartitions(spec, PartitionKind::kTensor, 2);
//   std::span<float> mine = whole.subspan(plan.value().offset[p], plan.value().Size(p));
//   ToModelLayout(plan.value(), spec, whole_partitioned, natural);   // for a .dtm file
//
// The replica's vector is partition-major: partition 0's parameters, then partition 1's, ... so
// every partition owns one contiguous range of it, and shards, checkpoints and all-reduces work
// on ranges as for any model. Within a partition, its layers keep Model's layout (W row-major
// [in x out], then b); under "tensor", layer l of partition p holds the columns
// [columns[l][p], columns[l][p+1]) of W (an [in x cols] matrix) and those entries of b. With
// "layers" the partition-major vector is the model's own layout. Plain value; pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/model/model.h"
#include "core/status.h"

namespace dtrain::model {

enum class PartitionKind { kLayers, kTensor };

std::string_view PartitionKindName(PartitionKind kind);  // "layers", "tensor"
Result<PartitionKind> ParsePartitionKind(std::string_view name);
std::string_view PartitionKindChoices();

struct PartitionPlan {
  PartitionKind kind = PartitionKind::kLayers;
  int parts = 1;
  // kLayers: partition p holds layers [first_layer[p], first_layer[p + 1]) (parts + 1 entries).
  std::vector<int> first_layer;
  // kTensor: columns[l][p] .. columns[l][p + 1] are partition p's output units of layer l.
  std::vector<std::vector<int>> columns;
  // Partition p's parameters are [offset[p], offset[p + 1]) of the replica's vector.
  std::vector<std::size_t> offset;

  std::size_t Size(int p) const { return offset[p + 1] - offset[p]; }
  // The layers partition p computes (all of them under kTensor).
  int FirstLayer(int p) const { return kind == PartitionKind::kLayers ? first_layer[p] : 0; }
  int EndLayer(int p, int layers) const {
    return kind == PartitionKind::kLayers ? first_layer[p + 1] : layers;
  }
  // Partition p's output units of layer l: all of them under kLayers.
  int Columns(int l, int p, int out) const {
    return kind == PartitionKind::kTensor ? columns[l][p + 1] - columns[l][p] : out;
  }
  int FirstColumn(int l, int p) const { return kind == PartitionKind::kTensor ? columns[l][p] : 0; }
};

// Splits `spec` (valid) into `parts` partitions. kLayers needs at least as many layers as parts
// and balances the largest partition's parameter count; kTensor needs every layer to have at
// least `parts` output units and splits each as evenly as it goes. Errors say what is too small.
Result<PartitionPlan> PlanPartitions(const ModelSpec& spec, PartitionKind kind, int parts);

// Partition p's parameters as Model::Init would make them (each weight its InitialWeight; biases
// 0): params holds plan.Size(p) floats.
void PartitionInit(const PartitionPlan& plan, const Model& model, int p, std::span<float> params,
                   std::uint64_t seed);

// The replica's parameter vector in the model's own layout (Model, .dtm files), from the
// partition-major one, and back. Identity under kLayers.
void ToModelLayout(const PartitionPlan& plan, const Model& model,
                   std::span<const float> partitioned, std::span<float> natural);
void FromModelLayout(const PartitionPlan& plan, const Model& model, std::span<const float> natural,
                     std::span<float> partitioned);

}  // namespace dtrain::model
