#include "config/compression_section.h"

#include <cstdint>
#include <string>

#include "config/mode_traits.h"

namespace dtrain::config::internal {
namespace {

constexpr std::int64_t kMaxWarmupSteps = 10'000'000'000;  // train.steps' own limit

// What a mode without kCompressionKeys exchanges instead of a gradient compression could shrink.
std::string WhatItExchanges(Exchange exchange) {
  switch (exchange) {
    case Exchange::kNone:
      return "trains one replica, with no gradients to exchange";
    case Exchange::kSynchronous:  // sync's row has kCompressionKeys
      break;
    case Exchange::kAsynchronous:
      return "pushes its gradients to parameter servers";
    case Exchange::kPeriodicAverage:
      return "averages parameters, not gradients";
    case Exchange::kWorkUnits:
      return "pushes its work units' gradients to L-BFGS's shards";
  }
  return "exchanges its gradients another way";
}

}  // namespace

std::string WhyNotOnTheRing(const ClusterConfig& c) {
  const ModeTraits& mode = TraitsOf(c.mode);
  if ((mode.keys & kCompressionKeys) == 0) {
    return "mode \"" + std::string(mode.name) + "\" " + WhatItExchanges(mode.exchange);
  }
  if (c.allreduce != AllReduce::kRing) {
    return "allreduce \"" + std::string(AllReduceName(c.allreduce)) +
           "\" sums the gradients on parameter servers";
  }
  return "model_parallel = " + std::to_string(c.model_parallel) +
         " splits each replica's gradient among its partitions";
}

bool CompressionApplies(const ClusterConfig& c) {
  return (TraitsOf(c.mode).keys & kCompressionKeys) != 0 && c.allreduce == AllReduce::kRing &&
         c.model_parallel == 1;
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
  if (method != nullptr && s.method != compress::Method::kNone && layout_known &&
      !CompressionApplies(*c)) {
    r.Report(*method, "compression",
             "is \"" + std::string(compress::MethodName(s.method)) +
                 "\", but compression applies to the gradients of mode " +
                 QuotedModes([](const ModeTraits& m) { return (m.keys & kCompressionKeys) != 0; }) +
                 " with allreduce \"ring\" and model_parallel = 1 for now: " + WhyNotOnTheRing(*c));
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
