// The [cluster] layouts where no job trains elastically (sync jobs on the ring or one parameter
// server and local jobs do), shared by the tests of the keys that make a job elastic (min_workers
// below workers, max_workers above): each such key set there is refused at its line, saying why.
//
//   CheckRefusedWhereNotElastic("min_workers", 1);  // "is 1, but elastic training is for ..."
#pragma once

#include <boost/test/unit_test.hpp>
#include <string>

#include "config/diagnostic_checks.h"

namespace dtrain::testing {

// `key` = `value` refused, at column 15, in a two-worker job of each layout that cannot train
// elastically (`key` must be 11 characters long, as min_workers and max_workers are). The
// parameter-server layout refused (compression) is the keys' own tests'
// (their values differ: RefusedOnShards).
inline void CheckRefusedWhereNotElastic(const std::string& key, int value) {
  const std::string is = "is " + std::to_string(value) + ", but ";
  const std::string elastic =
      is +
      "elastic training is for mode \"sync\" with allreduce \"ring\" or \"ps\", or mode "
      "\"local\", with model_parallel = 1: ";
  const struct {
    std::string cluster;
    int line;
    std::string why;
  } cases[] = {
      {"workers = 2\nmode = \"async\"\n", 6, "mode \"async\" pushes its gradients"},
      {"workers = 2\nmode = \"local\"\nmodel_parallel = 2\n", 7,
       "model_parallel = 2 splits each replica among its partitions"},
      {"workers = 2\nmode = \"sync\"\nmodel_parallel = 2\n", 7,
       "model_parallel = 2 splits each replica's gradient among its partitions"},
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

// `key` = `value` on allreduce "ps" (a job of 3 workers, so min_workers 2 and max_workers 4 both
// make it elastic): refused with compression, saying why (with several servers, or backup
// workers on one, it is taken: min_workers_key's test).
inline void CheckRefusedOnShards(const std::string& key, int value) {
  const std::string is = "is " + std::to_string(value) + ", but ";
  const struct {
    std::string keys;
    std::string why;
  } cases[] = {
      {"compression = \"bf16\"\n",
       "cluster.compression \"bf16\" keeps residuals a regroup cannot carry over: elastic jobs "
       "exchange whole gradients or parameters (compression = \"none\")"},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.keys) {
      CheckDiagnostics(
          ParseInline("[data]\nformat = \"synthetic\"\n[cluster]\nworkers = 3\nmode = \"sync\"\n"
                      "allreduce = \"ps\"\n" +
                      c.keys + key + " = " + std::to_string(value) + "\n"),
          {{"inline.toml", 8, 15, "cluster." + key, is + c.why}});
    }
  }
}

}  // namespace dtrain::testing
