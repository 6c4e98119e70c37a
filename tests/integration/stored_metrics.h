// A job's stored metrics read back through a real daemon, for tests that check what was judged:
// one process's values of one metric by step (and the largest of them), and the evaluation the
// early-stopping rule keeps as the best of them.
//
//   auto losses = StoredMetric(d, id, "eval_loss");
//   std::int64_t best = BestStep(losses, /*lower_is_better=*/true, /*min_delta=*/0.0);
#pragma once

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "integration/daemon_fixture.h"

namespace dtrain::testing {

// The stored values of metric `name` from process `rank` (a Sandblaster job evaluates on its
// coordinator, its last rank), by step.
inline std::vector<std::pair<std::int64_t, double>> StoredMetric(const DaemonFixture& d,
                                                                 std::int64_t id,
                                                                 const std::string& name,
                                                                 int rank = 0) {
  const nlohmann::json reply = d.Request({{"type", "metrics"}, {"id", id}, {"name", name}});
  BOOST_REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
  std::vector<std::pair<std::int64_t, double>> out;
  for (const nlohmann::json& m : reply["metrics"]) {
    if (m["name"] == name && m["worker"] == rank) {
      out.emplace_back(m["step"].get<std::int64_t>(), m["value"].get<double>());
    }
  }
  return out;
}

// The largest value of metric `name` that the job's process `rank` recorded (0 if none).
inline double LargestOf(const DaemonFixture& d, std::int64_t id, const std::string& name,
                        int rank) {
  double largest = 0.0;
  for (const auto& [step, value] : StoredMetric(d, id, name, rank))
    largest = std::max(largest, value);
  return largest;
}

// The step of the best of `values` as the job file's rule judges them: the first value, then
// each that beats the best so far by more than `min_delta` (-1 when there is none).
inline std::int64_t BestStep(const std::vector<std::pair<std::int64_t, double>>& values,
                             bool lower_is_better, double min_delta) {
  std::int64_t step = -1;
  double best = 0.0;
  for (const auto& [at, value] : values) {
    const double gain = lower_is_better ? best - value : value - best;
    if (step < 0 || gain > min_delta) step = at, best = value;
  }
  return step;
}

}  // namespace dtrain::testing
