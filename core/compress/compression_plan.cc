#include "core/compress/compression_plan.h"

#include <algorithm>
#include <cmath>

#include "core/name_table.h"

namespace dtrain::compress {
namespace {

constexpr NameTable<Method, 4> kMethods{{{{Method::kNone, "none"},
                                          {Method::kBf16, "bf16"},
                                          {Method::kPowerSgd, "powersgd"},
                                          {Method::kTopK, "topk"}}},
                                        "none, bf16, powersgd, topk"};

// A compressed form pays when it is at most a quarter of the tensor.
constexpr std::size_t kMinSaving = 4;

TensorPlan Raw(const model::ParamTensor& t) {
  return {.tensor = t, .encoding = Encoding::kRaw, .sent_floats = t.count()};
}

TensorPlan PlanTensor(const model::ParamTensor& t, const Settings& s) {
  switch (s.method) {
    case Method::kNone:
      break;
    case Method::kBf16:
      return {.tensor = t, .encoding = Encoding::kBf16, .sent_floats = (t.count() + 1) / 2};
    case Method::kPowerSgd: {
      const auto r = static_cast<std::size_t>(s.rank);
      const std::size_t factors = r * (t.rows + t.cols);
      if (t.rows > r && t.cols > r && kMinSaving * factors <= t.count()) {
        return {
            .tensor = t, .encoding = Encoding::kLowRank, .sent_floats = factors, .rank = s.rank};
      }
      break;
    }
    case Method::kTopK: {
      const std::size_t k = SparseValues(t.count(), s.fraction);
      if (kMinSaving * 2 * k <= t.count()) {
        return {.tensor = t, .encoding = Encoding::kSparse, .sent_floats = 2 * k, .k = k};
      }
      break;
    }
  }
  return Raw(t);
}

}  // namespace

std::size_t SparseValues(std::size_t count, double fraction) {
  const auto k = std::max<std::size_t>(
      1, static_cast<std::size_t>(std::ceil(fraction * static_cast<double>(count))));
  return std::min(k, count);
}

std::string_view MethodName(Method method) { return kMethods.Name(method); }

Result<Method> ParseMethod(std::string_view name) {
  return kMethods.Parse(name, "cluster.compression");
}

bool ExchangesByGather(Method method) { return method == Method::kBf16 || method == Method::kTopK; }

std::string_view MethodChoices() { return kMethods.choices; }

std::string_view EncodingName(Encoding encoding) {
  switch (encoding) {
    case Encoding::kRaw:
      return "raw";
    case Encoding::kBf16:
      return "bf16";
    case Encoding::kLowRank:
      return "low rank";
    case Encoding::kSparse:
      return "sparse";
  }
  return "raw";
}

std::vector<TensorPlan> PlanCompression(std::span<const model::ParamTensor> tensors,
                                        const Settings& settings) {
  std::vector<TensorPlan> plan;
  plan.reserve(tensors.size());
  for (const model::ParamTensor& t : tensors) plan.push_back(PlanTensor(t, settings));
  return plan;
}

std::string DescribeTensorPlan(const TensorPlan& t) {
  return t.tensor.name + " " + std::to_string(t.tensor.rows) + "x" + std::to_string(t.tensor.cols) +
         ": " + std::string(EncodingName(t.encoding)) + ", " +
         std::to_string(t.tensor.count() * sizeof(float)) + " -> " +
         std::to_string(t.sent_floats * sizeof(float)) + " bytes a step";
}

std::size_t PlanFloats(std::span<const TensorPlan> plan) {
  std::size_t n = 0;
  for (const TensorPlan& t : plan) n += t.tensor.count();
  return n;
}

std::size_t PlanSentFloats(std::span<const TensorPlan> plan) {
  std::size_t n = 0;
  for (const TensorPlan& t : plan) n += t.sent_floats;
  return n;
}

}  // namespace dtrain::compress
