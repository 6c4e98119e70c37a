#include "core/data/click_synthetic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/data/random.h"

namespace dtrain::data {
namespace {

constexpr std::uint64_t kRowStream = 0x636C69636B73ULL;       // "clicks"
constexpr std::uint64_t kWeightStream = 0x706C616E746564ULL;  // "planted"

}  // namespace

float PlantedWeight(const ClickOptions& o, std::uint64_t feature) {
  SplitMix64 rng(MixSeed(MixSeed(o.seed, kWeightStream), feature));
  return static_cast<float>(o.weight_scale * rng.Normal());
}

ClickData MakeClicks(const ClickOptions& o) {
  ClickData out;
  SparseRows& d = out.rows;
  d.features = o.features;
  d.source = "synthetic:clicks";
  d.num_classes = 2;
  d.index.reserve(o.rows * static_cast<std::size_t>(o.nonzeros));
  d.value.reserve(o.rows * static_cast<std::size_t>(o.nonzeros));
  d.labels.reserve(o.rows);
  out.probability.reserve(o.rows);
  SplitMix64 rng(MixSeed(o.seed, kRowStream));
  // exp(u ln(F + 1)) - 1 for uniform u: P(feature <= x) = ln(x + 1) / ln(F + 1), density ~ 1/(x+1).
  const double log_span = std::log(static_cast<double>(o.features) + 1.0);
  std::vector<std::uint64_t> row;
  for (std::size_t r = 0; r < o.rows; ++r) {
    row.clear();
    for (int j = 0; j < o.nonzeros; ++j) {
      const double drawn = std::floor(std::exp(rng.Uniform() * log_span)) - 1.0;
      row.push_back(std::min(static_cast<std::uint64_t>(std::max(drawn, 0.0)), o.features - 1));
    }
    std::sort(row.begin(), row.end());
    double score = o.bias;
    for (std::size_t j = 0; j < row.size(); ++j) {
      score += PlantedWeight(o, row[j]);
      if (j > 0 && row[j] == row[j - 1]) {
        d.value.back() += 1.0f;
      } else {
        d.index.push_back(static_cast<std::uint32_t>(row[j]));
        d.value.push_back(1.0f);
      }
    }
    d.row_start.push_back(d.index.size());
    const double p = 1.0 / (1.0 + std::exp(-score));
    out.probability.push_back(static_cast<float>(p));
    d.labels.push_back(rng.Uniform() < p ? 1.0f : 0.0f);
  }
  return out;
}

Status WriteLibsvm(const SparseRows& rows, const std::string& path) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "w"),
                                                             &std::fclose);
  if (file == nullptr) return Status::Error(path + ": cannot create");
  for (std::size_t r = 0; r < rows.rows(); ++r) {
    std::fprintf(file.get(), "%g", static_cast<double>(rows.labels[r]));
    const std::span<const std::uint32_t> index = rows.Index(r);
    const std::span<const float> value = rows.Value(r);
    for (std::size_t i = 0; i < index.size(); ++i) {
      std::fprintf(file.get(), " %llu:%g", static_cast<unsigned long long>(index[i]) + 1,
                   static_cast<double>(value[i]));
    }
    std::fputc('\n', file.get());
  }
  if (std::fflush(file.get()) != 0 || std::ferror(file.get()) != 0) {
    return Status::Error(path + ": write error");
  }
  return Status::Ok();
}

}  // namespace dtrain::data
