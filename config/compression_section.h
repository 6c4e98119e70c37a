// Reading a job's gradient compression from [cluster]: compression, compression_rank,
// compression_fraction and compression_warmup_steps (core/compress/compression_plan.h's
// Settings), and writing them back. Internal to dtrain_config, like toml_reader.h.
//
//   ReadCompression(cluster_reader, &job.cluster);  // after mode, allreduce and model_parallel
//   WriteCompression(job.cluster.compression, w);   // the keys as ReadCompression reads them
//
// A method other than "none" is refused unless CompressionApplies (the mode table's
// kCompressionKeys, whole replicas), and "powersgd" where the gradients go to parameter servers
// (async, allreduce "ps"), with the reason; compression_rank is read by "powersgd"
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

// Whether a job laid out as `c` may compress what its replicas exchange (and shows the keys):
// mode "sync" (gradients, on the ring or pushed to parameter servers), "async" (its pushes) or
// "local" (its averages), every replica one process (model_parallel = 1). "powersgd" needs more:
// no parameter servers.
bool CompressionApplies(const ClusterConfig& c);

void ReadCompression(TableReader& cluster, ClusterConfig* c);

void WriteCompression(const compress::Settings& s, TomlWriter& w);

}  // namespace dtrain::config::internal
