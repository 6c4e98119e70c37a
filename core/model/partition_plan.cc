#include "core/model/partition_plan.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "core/name_table.h"

namespace dtrain::model {
namespace {

constexpr NameTable<PartitionKind, 2> kKinds{
    {{{PartitionKind::kLayers, "layers"}, {PartitionKind::kTensor, "tensor"}}}, "layers, tensor"};

std::size_t LayerParams(const LayerView& layer) {
  return (static_cast<std::size_t>(layer.in) + 1) * static_cast<std::size_t>(layer.out);
}

// first[p]..first[p+1]: consecutive layers per partition, the largest partition's parameter
// count as small as it can be (a small dynamic program: layers and parts are few).
std::vector<int> BalanceLayers(const std::vector<LayerView>& layers, int parts) {
  const int n = static_cast<int>(layers.size());
  std::vector<std::size_t> prefix(static_cast<std::size_t>(n) + 1, 0);
  for (int l = 0; l < n; ++l) prefix[l + 1] = prefix[l] + LayerParams(layers[l]);
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  // best[k][i]: the least largest part splitting layers [0, i) into k parts; cut[k][i] its last
  // cut.
  std::vector<std::vector<std::size_t>> best(parts + 1, std::vector<std::size_t>(n + 1, kNone));
  std::vector<std::vector<int>> cut(parts + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int k = 1; k <= parts; ++k) {
    for (int i = k; i <= n; ++i) {
      for (int j = k - 1; j < i; ++j) {
        if (best[k - 1][j] == kNone) continue;
        const std::size_t worst = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        if (worst < best[k][i]) {
          best[k][i] = worst;
          cut[k][i] = j;
        }
      }
    }
  }
  std::vector<int> first(static_cast<std::size_t>(parts) + 1, n);
  for (int k = parts, i = n; k > 0; --k) {
    first[k] = i;
    i = cut[k][i];
    first[k - 1] = i;
  }
  return first;
}

// Calls copy(natural_offset, partitioned_offset, floats) for every run of consecutive floats
// that the two layouts share, in order of the partitioned layout.
template <typename Copy>
void ForEachRun(const PartitionPlan& plan, const Model& model, Copy copy) {
  if (plan.kind == PartitionKind::kLayers) {
    copy(std::size_t{0}, std::size_t{0}, model.NumParams());
    return;
  }
  const std::vector<LayerView>& layers = model.layers();
  std::size_t at = 0;  // in the partitioned vector
  for (int p = 0; p < plan.parts; ++p) {
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const LayerView& layer = layers[l];
      const auto first = static_cast<std::size_t>(plan.columns[l][p]);
      const auto cols = static_cast<std::size_t>(plan.columns[l][p + 1]) - first;
      for (std::size_t row = 0; row < static_cast<std::size_t>(layer.in); ++row) {
        copy(layer.weight_offset + row * static_cast<std::size_t>(layer.out) + first, at, cols);
        at += cols;
      }
      copy(layer.bias_offset + first, at, cols);
      at += cols;
    }
  }
}

}  // namespace

std::string_view PartitionKindName(PartitionKind kind) { return kKinds.Name(kind); }
Result<PartitionKind> ParsePartitionKind(std::string_view name) {
  return kKinds.Parse(name, "partition kind");
}
std::string_view PartitionKindChoices() { return kKinds.choices; }

Result<PartitionPlan> PlanPartitions(const ModelSpec& spec, PartitionKind kind, int parts) {
  if (parts < 1) return Status::Error("a model needs at least one partition");
  const Model model(spec);
  const std::vector<LayerView>& layers = model.layers();
  const int n = static_cast<int>(layers.size());
  PartitionPlan plan;
  plan.kind = kind;
  plan.parts = parts;
  plan.offset.assign(static_cast<std::size_t>(parts) + 1, 0);
  if (kind == PartitionKind::kLayers) {
    if (parts > n) {
      return Status::Error("partition = \"layers\" with model_parallel = " + std::to_string(parts) +
                           " needs at least " + std::to_string(parts) + " layers; the model has " +
                           std::to_string(n));
    }
    plan.first_layer = BalanceLayers(layers, parts);
    for (int p = 0; p < parts; ++p) plan.offset[p] = layers[plan.first_layer[p]].weight_offset;
    plan.offset[parts] = model.NumParams();
    return plan;
  }
  plan.columns.resize(layers.size());
  for (int l = 0; l < n; ++l) {
    const int out = layers[l].out;
    if (out < parts) {
      return Status::Error("partition = \"tensor\" with model_parallel = " + std::to_string(parts) +
                           " splits every layer's " + std::to_string(parts) + " ways, but layer " +
                           std::to_string(l + 1) + " has " + std::to_string(out) +
                           (out == 1 ? " unit" : " units"));
    }
    std::vector<int>& cols = plan.columns[l];
    cols.assign(static_cast<std::size_t>(parts) + 1, 0);
    for (int p = 0; p < parts; ++p) cols[p + 1] = cols[p] + out / parts + (p < out % parts ? 1 : 0);
  }
  for (int p = 0; p < parts; ++p) {
    std::size_t size = 0;
    for (int l = 0; l < n; ++l) {
      size += (static_cast<std::size_t>(layers[l].in) + 1) *
              static_cast<std::size_t>(plan.columns[l][p + 1] - plan.columns[l][p]);
    }
    plan.offset[p + 1] = plan.offset[p] + size;
  }
  return plan;
}

void PartitionInit(const PartitionPlan& plan, const Model& model, int p, std::span<float> params,
                   std::uint64_t seed) {
  std::fill(params.begin(), params.end(), 0.0f);
  const std::vector<LayerView>& layers = model.layers();
  const int n = static_cast<int>(layers.size());
  std::size_t at = 0;
  for (int l = plan.FirstLayer(p); l < plan.EndLayer(p, n); ++l) {
    const LayerView& layer = layers[l];
    const auto cols = static_cast<std::size_t>(plan.Columns(l, p, layer.out));
    const auto first = static_cast<std::size_t>(plan.FirstColumn(l, p));
    for (std::size_t i = 0; i < static_cast<std::size_t>(layer.in); ++i) {
      for (std::size_t j = 0; j < cols; ++j) {
        params[at + i * cols + j] =
            InitialWeight(model.spec(), layer, static_cast<std::size_t>(l),
                          i * static_cast<std::size_t>(layer.out) + first + j, seed);
      }
    }
    at += (static_cast<std::size_t>(layer.in) + 1) * cols;
  }
}

void ToModelLayout(const PartitionPlan& plan, const Model& model,
                   std::span<const float> partitioned, std::span<float> natural) {
  ForEachRun(plan, model, [&](std::size_t n, std::size_t p, std::size_t count) {
    std::copy_n(partitioned.data() + p, count, natural.data() + n);
  });
}

void FromModelLayout(const PartitionPlan& plan, const Model& model, std::span<const float> natural,
                     std::span<float> partitioned) {
  ForEachRun(plan, model, [&](std::size_t n, std::size_t p, std::size_t count) {
    std::copy_n(natural.data() + n, count, partitioned.data() + p);
  });
}

}  // namespace dtrain::model
