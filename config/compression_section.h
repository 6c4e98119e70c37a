// Reading a job's gradient compression from [cluster]: compression, compression_rank,
// compression_fraction and compression_warmup_steps (core/compress/compression_plan.h's
// Settings), and writing them back. Internal to dtrain_config, like toml_reader.h.
//
//   ReadCompression(cluster_reader, &job.cluster);  // after mode, allreduce and model_parallel
//   WriteCompression(job.cluster.compression, w);   // the keys as ReadCompression reads them
//
// A method other than "none" is refused unless CompressionApplies (the mode table's
// kCompressionKeys, allreduce "ring", whole replicas); compression_rank is read by "powersgd"
// only, compression_fraction by "topk" only, compression_warmup_steps by any method but "none",
// and each is refused with another. Every refusal is at the key refused, and none is made
// against a key that failed to read.
#pragma once

#include <string>

#include "config/job.h"
#include "config/toml_reader.h"
#include "config/toml_text.h"
#include "core/compress/compression_plan.h"

namespace dtrain::config::internal {

// Whether a job laid out as `c` may compress its gradients: mode "sync" on the ring, every
// replica one process (model_parallel = 1).
bool CompressionApplies(const ClusterConfig& c);
// Why `c`'s replicas do not all-reduce whole gradients on the ring, naming the key that rules it
// out ("mode \"async\" pushes its gradients to parameter servers"); for a `c` where
// CompressionApplies is false.
std::string WhyNotOnTheRing(const ClusterConfig& c);

void ReadCompression(TableReader& cluster, ClusterConfig* c);

void WriteCompression(const compress::Settings& s, TomlWriter& w);

}  // namespace dtrain::config::internal
