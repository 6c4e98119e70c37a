// StalenessStats: how stale the gradients a parameter-server shard applied were. A push computed
// at clock c from parameters of global clock g_f has staleness c - g_f (0: as fresh as synchronous
// SGD; see parameter_shard.h, "Clocks and staleness"). Both shard kinds (dense ParameterShard,
// sparse SparseShard) keep one and report it as the staleness_* metrics.
//
//   StalenessStats s;
//   s.Record(2);            // one push of staleness 2
//   s.Record(0, workers);   // a synchronous step: every worker's push, staleness 0
//   s.Percentile(0.9);
//
// Plain value: the owner guards it.
#pragma once

#include <cstdint>
#include <vector>

namespace dtrain::dist {

struct StalenessStats {
  std::uint64_t pushes = 0;              // recorded
  std::vector<std::uint64_t> histogram;  // histogram[s]: pushes of staleness s
  std::uint64_t max = 0;
  double mean = 0.0;

  // `count` pushes of staleness `staleness`.
  void Record(std::uint64_t staleness, std::uint64_t count = 1);
  // The smallest staleness s with at least q of the pushes at or below s; 0 when none.
  std::uint64_t Percentile(double q) const;
};

}  // namespace dtrain::dist
