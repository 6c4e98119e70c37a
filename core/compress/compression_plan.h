// Gradient compression: which method a job's replicas exchange their gradients with
// ([cluster] compression), and how each parameter tensor travels under it — the one place that
// decides whether compressing a tensor pays.
//
//   Settings s{.method = Method::kPowerSgd, .rank = 4};
//   std::vector<TensorPlan> plan = PlanCompression(model.Tensors(), s);
//   // plan[i].encoding: kLowRank for a 2048x2048 weight matrix, kRaw for its biases
//
// The rules (pure functions of the tensors' shapes and the settings):
//   none      every tensor kRaw.
//   bf16      every tensor kBf16 (two bytes a value).
//   powersgd  a matrix of rows, cols > rank whose factors, rank * (rows + cols) floats, are at
//             most a quarter of its rows * cols: kLowRank; anything else (biases, small layers)
//             kRaw.
//   topk      k = max(1, ceil(fraction * count)) values with their indices (2k floats) where that
//             is at most a quarter of the tensor's count: kSparse; anything else kRaw.
// sent_floats is what one replica contributes for the tensor in one step: count (kRaw),
// ceil(count / 2) (kBf16), rank * (rows + cols) (kLowRank: P then Q), 2k (kSparse).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/layer.h"
#include "core/status.h"

namespace dtrain::compress {

enum class Method { kNone, kBf16, kPowerSgd, kTopK };

// "none", "bf16", "powersgd", "topk" — the job file's words (MethodChoices: all of them, joined by
// ", "); ParseMethod's error lists them.
std::string_view MethodName(Method method);
Result<Method> ParseMethod(std::string_view name);
std::string_view MethodChoices();
// Whether a compressed step exchanges by all-gather (bf16, topk: every replica's values reach
// every replica) rather than by means (powersgd's factors).
bool ExchangesByGather(Method method);

// Limits of the settings, checked by the job file (config/cluster_section.cc).
inline constexpr int kMaxRank = 64;
inline constexpr double kMinFraction = 1e-6;

struct Settings {
  Method method = Method::kNone;
  int rank = 4;                   // powersgd: the factors' rank, 1 .. kMaxRank
  double fraction = 0.001;        // topk: the share of each tensor's values sent, (0, 1]
  std::int64_t warmup_steps = 0;  // steps exchanged uncompressed first
  bool operator==(const Settings&) const = default;
};

// How one tensor travels.
enum class Encoding { kRaw, kBf16, kLowRank, kSparse };
std::string_view EncodingName(Encoding encoding);  // "raw", "bf16", "low rank", "sparse"

struct TensorPlan {
  model::ParamTensor tensor;
  Encoding encoding = Encoding::kRaw;
  std::size_t sent_floats = 0;  // per replica per step (see above)
  std::size_t k = 0;            // kSparse: values sent
  int rank = 0;                 // kLowRank: the factors' rank
};

// Top-k's values of `count`: min(count, max(1, ceil(fraction * count))) — a sparse tensor's k, or
// a piece's of one (a chunk of a host's sum, GradientCompressor).
std::size_t SparseValues(std::size_t count, double fraction);

std::vector<TensorPlan> PlanCompression(std::span<const model::ParamTensor> tensors,
                                        const Settings& settings);

// For a job's log: "layer 2 (dense) weights 2048x2048: low rank, 16777216 -> 65536 bytes a step".
std::string DescribeTensorPlan(const TensorPlan& t);

// Sums over a plan: the floats of the gradient (count), and what one replica sends per step.
std::size_t PlanFloats(std::span<const TensorPlan> plan);
std::size_t PlanSentFloats(std::span<const TensorPlan> plan);

}  // namespace dtrain::compress
