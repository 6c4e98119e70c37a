#include "core/sparse/sparse_model.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/data/random.h"
#include "core/name_table.h"

namespace dtrain::sparse {
namespace {

constexpr NameTable<SparseModelType, 3> kTypes{{{{SparseModelType::kLogistic, "logistic"},
                                                 {SparseModelType::kSoftmax, "softmax"},
                                                 {SparseModelType::kFm, "fm"}}},
                                               "logistic, softmax, fm"};
constexpr std::string_view kSpecPrefix = "sparse_";

// `value` as a T, whole, or nullopt.
template <typename T>
std::optional<T> Number(std::string_view value) {
  T out{};
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (error != std::errc() || end != value.data() + value.size()) return std::nullopt;
  return out;
}

}  // namespace

std::string_view SparseModelTypeName(SparseModelType type) { return kTypes.Name(type); }
Result<SparseModelType> ParseSparseModelType(std::string_view name) {
  return kTypes.Parse(name, "sparse model type");
}
std::string_view SparseModelTypeChoices() { return kTypes.choices; }

std::string FormatSparseModelSpec(const SparseModelSpec& spec) {
  std::ostringstream out;
  out << kSpecPrefix << SparseModelTypeName(spec.type) << " classes=" << spec.classes;
  if (spec.type == SparseModelType::kFm) {
    out << " factors=" << spec.factors << " init_scale=" << spec.init_scale;
  }
  return out.str();
}

Result<SparseModelSpec> ParseSparseModelSpec(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string word;
  if (!(in >> word) || !word.starts_with(kSpecPrefix)) {
    return Status::Error("not a sparse model spec (it starts with \"" + std::string(kSpecPrefix) +
                         "\")");
  }
  Result<SparseModelType> type = ParseSparseModelType(word.substr(kSpecPrefix.size()));
  if (!type.ok()) return type.status();
  SparseModelSpec spec{.type = type.value()};
  while (in >> word) {
    const std::size_t equals = word.find('=');
    const std::string key = word.substr(0, equals);
    const std::string_view value = equals == std::string::npos
                                       ? std::string_view()
                                       : std::string_view(word).substr(equals + 1);
    std::optional<int> integer = Number<int>(value);
    if (key == "classes" && integer) {
      spec.classes = *integer;
    } else if (key == "factors" && integer) {
      spec.factors = *integer;
    } else if (key == "init_scale" && Number<float>(value)) {
      spec.init_scale = *Number<float>(value);
    } else {
      return Status::Error("sparse model spec: unexpected \"" + word + "\"");
    }
  }
  if (Status valid = ValidateSparseModelSpec(spec); !valid.ok()) return valid;
  return spec;
}

Status ValidateSparseModelSpec(const SparseModelSpec& spec) {
  if (spec.type == SparseModelType::kSoftmax) {
    if (spec.classes < 2 || spec.classes > 65536) {
      return Status::Error("sparse softmax needs 2 to 65536 classes, got " +
                           std::to_string(spec.classes));
    }
  } else if (spec.classes != 2) {
    return Status::Error("sparse logistic and fm models take labels 0/1 (2 classes), got " +
                         std::to_string(spec.classes));
  }
  if (spec.type == SparseModelType::kFm && (spec.factors < 1 || spec.factors > 1024)) {
    return Status::Error("fm factors must be in [1, 1024], got " + std::to_string(spec.factors));
  }
  if (!(spec.init_scale >= 0.0f && spec.init_scale <= 1.0f)) {
    return Status::Error("fm init_scale must be in [0, 1]");
  }
  return Status::Ok();
}

SparseModel::SparseModel(SparseModelSpec spec) : spec_(spec) {
  assert(ValidateSparseModelSpec(spec_).ok());
}

std::size_t SparseModel::SlotWidth() const {
  switch (spec_.type) {
    case SparseModelType::kLogistic:
      return 1;
    case SparseModelType::kSoftmax:
      return static_cast<std::size_t>(spec_.classes);
    case SparseModelType::kFm:
      return 1 + static_cast<std::size_t>(spec_.factors);
  }
  return 1;
}

std::size_t SparseModel::GlobalWidth() const {
  return spec_.type == SparseModelType::kSoftmax ? static_cast<std::size_t>(spec_.classes) : 1;
}

model::LossType SparseModel::Loss() const {
  return spec_.type == SparseModelType::kSoftmax ? model::LossType::kSoftmaxCrossEntropy
                                                 : model::LossType::kBinaryCrossEntropy;
}

void SparseModel::InitSlot(std::uint64_t seed, std::uint32_t feature, float* slot) const {
  std::fill(slot, slot + SlotWidth(), 0.0f);
  if (spec_.type != SparseModelType::kFm) return;
  data::SplitMix64 rng(data::MixSeed(seed, feature));
  for (int f = 0; f < spec_.factors; ++f) {
    slot[1 + f] = static_cast<float>((2.0 * rng.Uniform() - 1.0) * spec_.init_scale);
  }
}

void SparseModel::Forward(const SparseBatch& batch, const float* slots, const float* globals,
                          float* out) const {
  const std::size_t width = SlotWidth();
  const int outputs = Outputs();
  const int k = spec_.factors;
  std::vector<double> sum(spec_.type == SparseModelType::kFm ? k : 0);
  for (int r = 0; r < batch.rows(); ++r) {
    float* o = out + static_cast<std::size_t>(r) * outputs;
    std::copy(globals, globals + outputs, o);
    std::fill(sum.begin(), sum.end(), 0.0);
    double squares = 0.0;  // FM: sum_f sum_i v_if^2 x_i^2
    for (std::uint32_t e = batch.row_start[r]; e < batch.row_start[r + 1]; ++e) {
      const float x = batch.value[e];
      const float* slot = slots + batch.local[e] * width;
      for (int c = 0; c < outputs; ++c) o[c] += slot[c] * x;
      if (spec_.type != SparseModelType::kFm) continue;
      for (int f = 0; f < k; ++f) {
        const double vx = static_cast<double>(slot[1 + f]) * x;
        sum[f] += vx;
        squares += vx * vx;
      }
    }
    if (spec_.type == SparseModelType::kFm) {
      double pairs = -squares;
      for (const double s : sum) pairs += s * s;
      o[0] += static_cast<float>(0.5 * pairs);
    }
  }
}

model::LossValue SparseModel::ForwardBackward(const SparseBatch& batch, const float* slots,
                                              const float* globals, float* grad_slots,
                                              float* grad_globals) const {
  const std::size_t width = SlotWidth();
  const int outputs = Outputs();
  const int rows = batch.rows();
  std::vector<float> out(static_cast<std::size_t>(rows) * outputs);
  Forward(batch, slots, globals, out.data());
  std::vector<float> dout(out.size());
  const model::LossValue value =
      model::ComputeLoss(Loss(), out.data(), batch.labels.data(), rows, outputs, dout.data());

  std::fill(grad_slots, grad_slots + batch.keys.size() * width, 0.0f);
  std::fill(grad_globals, grad_globals + GlobalWidth(), 0.0f);
  const int k = spec_.factors;
  std::vector<double> sum(spec_.type == SparseModelType::kFm ? k : 0);
  for (int r = 0; r < rows; ++r) {
    const float* d = dout.data() + static_cast<std::size_t>(r) * outputs;
    for (int c = 0; c < outputs; ++c) grad_globals[c] += d[c];
    const std::uint32_t begin = batch.row_start[r], end = batch.row_start[r + 1];
    if (spec_.type == SparseModelType::kFm) {  // the row's sum_i v_if x_i, again
      std::fill(sum.begin(), sum.end(), 0.0);
      for (std::uint32_t e = begin; e < end; ++e) {
        const float* slot = slots + batch.local[e] * width;
        for (int f = 0; f < k; ++f) sum[f] += static_cast<double>(slot[1 + f]) * batch.value[e];
      }
    }
    for (std::uint32_t e = begin; e < end; ++e) {
      const float x = batch.value[e];
      const float* slot = slots + batch.local[e] * width;
      float* g = grad_slots + batch.local[e] * width;
      for (int c = 0; c < outputs; ++c) g[c] += d[c] * x;
      if (spec_.type != SparseModelType::kFm) continue;
      for (int f = 0; f < k; ++f) {  // d score / d v_if = x_i sum_f - v_if x_i^2
        g[1 + f] += static_cast<float>(d[0] * x * (sum[f] - static_cast<double>(slot[1 + f]) * x));
      }
    }
  }
  return value;
}

}  // namespace dtrain::sparse
