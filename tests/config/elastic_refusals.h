// The [cluster] layouts where no job trains elastically (sync ring and local jobs do), shared by
// the tests of the keys that make a job elastic (min_workers below workers, max_workers above):
// each such key set there is refused at its line, saying why.
//
//   CheckRefusedWhereNotElastic("min_workers", 1);  // "is 1, but elastic training is for ..."
#pragma once

#include <boost/test/unit_test.hpp>
#include <string>

#include "config/diagnostic_checks.h"

namespace dtrain::testing {

// `key` = `value` refused, at column 15, in a two-worker job of each layout that cannot train
// elastically (`key` must be 11 characters long, as min_workers and max_workers are).
inline void CheckRefusedWhereNotElastic(const std::string& key, int value) {
  const std::string is = "is " + std::to_string(value) + ", but ";
  const std::string elastic =
      is +
      "elastic training is for mode \"sync\" with allreduce \"ring\" or mode \"local\", "
      "model_parallel = 1 and scheduler = \"daemon\": ";
  const struct {
    std::string cluster;
    int line;
    std::string why;
  } cases[] = {
      {"workers = 2\nmode = \"async\"\n", 6, "mode \"async\" pushes its gradients"},
      {"workers = 2\nmode = \"local\"\nmodel_parallel = 2\n", 7,
       "model_parallel = 2 splits each replica among its partitions"},
      {"workers = 2\nmode = \"local\"\nscheduler = \"slurm\"\n", 7,
       "scheduler \"slurm\" places the job's processes itself"},
      {"workers = 2\nmode = \"sync\"\nallreduce = \"ps\"\n", 7,
       "allreduce \"ps\" sums the gradients on parameter servers"},
      {"workers = 2\nmode = \"sync\"\nmodel_parallel = 2\n", 7,
       "model_parallel = 2 splits each replica's gradient among its partitions"},
      {"workers = 2\nmode = \"sync\"\nscheduler = \"slurm\"\n", 7,
       "scheduler \"slurm\" places the job's processes itself"},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.cluster) {
      CheckDiagnostics(ParseInline("[data]\nformat = \"synthetic\"\n[model]\ntype = \"mlp\"\n"
                                   "hidden = [8]\n[cluster]\n" +
                                   c.cluster + key + " = " + std::to_string(value) + "\n"),
                       {{"inline.toml", c.line + 3, 15, "cluster." + key, elastic + c.why}});
    }
  }
}

}  // namespace dtrain::testing
