#include "config/hierarchy_key.h"

#include <string>

#include "config/mode_traits.h"

namespace dtrain::config::internal {

std::string WhyNotOnTheRing(const ClusterConfig& c) {
  const Exchange exchange = TraitsOf(c.mode).exchange;
  if (exchange != Exchange::kSynchronous) {
    return "mode \"" + std::string(ClusterModeName(c.mode)) + "\" " +
           std::string(WhatItExchanges(exchange));
  }
  if (c.allreduce != AllReduce::kRing) {
    return "allreduce \"" + std::string(AllReduceName(c.allreduce)) +
           "\" sums the gradients on parameter servers";
  }
  return "model_parallel = " + std::to_string(c.model_parallel) +
         " splits each replica's gradient among its partitions";
}

void ReadHierarchy(TableReader& r, ClusterConfig* c) {
  const toml::node* hierarchy =
      r.Enum("hierarchy", ParseHierarchy, HierarchyChoices(), &c->hierarchy);
  const bool layout_known =
      !r.Failed("mode") && !r.Failed("allreduce") && !r.Failed("model_parallel");
  if (hierarchy == nullptr || r.Failed("hierarchy") || !layout_known || c->SumsOnTheRing()) {
    return;
  }
  r.Report(*hierarchy, "hierarchy",
           "is \"" + std::string(HierarchyName(c->hierarchy)) +
               "\", but it says how the replicas of mode \"sync\" with allreduce \"ring\" and "
               "model_parallel = 1 sum their gradients: " +
               WhyNotOnTheRing(*c));
}

void WriteHierarchy(Hierarchy hierarchy, TomlWriter& w) {
  w.String("hierarchy", HierarchyName(hierarchy));
}

}  // namespace dtrain::config::internal
