#include "config/compression_section.h"

#include <cstdint>
#include <string>

#include "config/mode_traits.h"

namespace dtrain::config::internal {
namespace {

constexpr std::int64_t kMaxWarmupSteps = 10'000'000'000;  // train.steps' own limit

// Why `c` may not compress with its method, naming the key that rules it out; empty if it may.
std::string WhyNot(const ClusterConfig& c) {
  const ModeTraits& mode = TraitsOf(c.mode);
  if ((mode.keys & kCompressionKeys) == 0) {
    return "mode \"" + std::string(mode.name) + "\" " + std::string(WhatItExchanges(mode.exchange));
  }
  if (c.model_parallel != 1) {
    return "model_parallel = " + std::to_string(c.model_parallel) +
           " splits each replica's gradient among its partitions";
  }
  if (c.Servers() > 0 && c.compression.method == compress::Method::kPowerSgd) {
    return std::string(mode.exchange == Exchange::kAsynchronous ? "mode \"async\" pushes"
                                                                : "allreduce \"ps\" pushes") +
           " each worker's gradient to parameter servers, which would have to rebuild every "
           "worker's low-rank product: PowerSGD's factors are summed by all-reduce (\"bf16\" and "
           "\"topk\" apply)";
  }
  return "";
}

}  // namespace

bool CompressionApplies(const ClusterConfig& c) {
  return (TraitsOf(c.mode).keys & kCompressionKeys) != 0 && c.model_parallel == 1;
}

void ReadCompression(TableReader& r, ClusterConfig* c) {
  compress::Settings& s = c->compression;
  const toml::node* method =
      r.Enum("compression", compress::ParseMethod, compress::MethodChoices(), &s.method);
  const toml::node* rank = r.Int("compression_rank", 1, compress::kMaxRank, &s.rank);
  const toml::node* fraction =
      r.Number("compression_fraction", Closed(compress::kMinFraction, 1), &s.fraction);
  const toml::node* warmup = r.Int("compression_warmup_steps", 0, kMaxWarmupSteps, &s.warmup_steps);
  if (r.Failed("compression")) return;
  const std::string is =
      "cluster.compression is \"" + std::string(compress::MethodName(s.method)) + "\"";
  if (rank != nullptr && s.method != compress::Method::kPowerSgd) {
    r.Report(*rank, "compression_rank",
             "is the rank of compression \"powersgd\"'s factors, but " + is);
  }
  if (fraction != nullptr && s.method != compress::Method::kTopK) {
    r.Report(*fraction, "compression_fraction",
             "is the share of each tensor that compression \"topk\" sends, but " + is);
  }
  if (warmup != nullptr && s.method == compress::Method::kNone) {
    r.Report(*warmup, "compression_warmup_steps", "delays compression, but " + is);
  }
  const bool layout_known =
      !r.Failed("mode") && !r.Failed("allreduce") && !r.Failed("model_parallel");
  const std::string why = layout_known ? WhyNot(*c) : "";
  if (method != nullptr && s.method != compress::Method::kNone && !why.empty()) {
    r.Report(*method, "compression",
             "is \"" + std::string(compress::MethodName(s.method)) +
                 "\", but compression applies to what the replicas of mode " +
                 QuotedModes([](const ModeTraits& m) { return (m.keys & kCompressionKeys) != 0; }) +
                 " exchange, with model_parallel = 1 for now: " + why);
  }
}

void WriteCompression(const compress::Settings& s, TomlWriter& w) {
  w.String("compression", compress::MethodName(s.method));
  if (s.method == compress::Method::kPowerSgd) w.Int("compression_rank", s.rank);
  if (s.method == compress::Method::kTopK) w.Double("compression_fraction", s.fraction);
  if (s.method != compress::Method::kNone) {
    w.Int("compression_warmup_steps", s.warmup_steps);
  }
}

}  // namespace dtrain::config::internal
