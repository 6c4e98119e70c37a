// Reading a job's [cluster] hierarchy ("auto" or "flat": whether sync ring replicas sum their
// gradients within each host before they send across hosts; core/dist/hierarchical_allreduce.h),
// and writing it back. Internal to dtrain_config, like toml_reader.h.
//
//   ReadHierarchy(cluster_reader, &job.cluster);   // after mode, allreduce and model_parallel
//   WriteHierarchy(job.cluster.hierarchy, w);
//
// The key applies where the replicas all-reduce on the ring (ClusterConfig::SumsOnTheRing: mode
// "sync" on the ring, whole replicas); given for any other job it is refused at its place, saying
// why, unless the key it depends on failed to read. "auto" is the default: the two levels run only
// when the job's workers are on h >= 2 hosts with the same r >= 2 on each, and not with compression
// (which runs on the flat ring).
#pragma once

#include <string>

#include "config/job.h"
#include "config/toml_reader.h"
#include "config/toml_text.h"

namespace dtrain::config::internal {

void ReadHierarchy(TableReader& cluster, ClusterConfig* c);

// Why `c`'s replicas do not all-reduce whole gradients on the ring, naming the key that rules it
// out ("allreduce \"ps\" sums the gradients on parameter servers"); for a `c` that does not
// SumsOnTheRing. Also said by cluster.min_workers and max_workers for a mode that is neither sync
// nor local.
std::string WhyNotOnTheRing(const ClusterConfig& c);

void WriteHierarchy(Hierarchy hierarchy, TomlWriter& w);

}  // namespace dtrain::config::internal
