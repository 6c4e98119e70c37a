#include "config/hierarchy_key.h"

#include <string>

#include "config/compression_section.h"
#include "config/mode_traits.h"

namespace dtrain::config::internal {

void ReadHierarchy(TableReader& r, ClusterConfig* c) {
  const toml::node* hierarchy =
      r.Enum("hierarchy", ParseHierarchy, HierarchyChoices(), &c->hierarchy);
  const bool layout_known =
      !r.Failed("mode") && !r.Failed("allreduce") && !r.Failed("model_parallel");
  if (hierarchy == nullptr || r.Failed("hierarchy") || !layout_known || CompressionApplies(*c)) {
    return;
  }
  r.Report(*hierarchy, "hierarchy",
           "is \"" + std::string(HierarchyName(c->hierarchy)) +
               "\", but it says how the replicas of mode " +
               QuotedModes([](const ModeTraits& m) { return (m.keys & kCompressionKeys) != 0; }) +
               " with allreduce \"ring\" and model_parallel = 1 sum their gradients: " +
               WhyNotOnTheRing(*c));
}

void WriteHierarchy(Hierarchy hierarchy, TomlWriter& w) {
  w.String("hierarchy", HierarchyName(hierarchy));
}

}  // namespace dtrain::config::internal
