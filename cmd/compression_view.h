// What `dtrain validate` shows of a job's gradient compression ([cluster] compression): the plan
// of every tensor of the model (core/compress/compression_plan.h), or on parameter servers of
// every shard's slice of a push (runner::CompressionPlanOf), with the bytes one replica sends for
// it per step before and after, and the totals, as TOML comments or as JSON.
//
//   PrintCompressionPlan(job, spec, std::cout);         // nothing for "none"
//   out["compression"] = CompressionPlanJson(job, spec);  // null for "none"
//
// Where the sync ring exchange overlaps the backward pass ([cluster] bucket_bytes, cut into more
// than one bucket), a line says so: each bucket is compressed on its own during the pass.
// Bytes are floats * 4: a tensor's count, and what its encoding sends (sent_floats); the ratio is
// bytes / sent bytes, so 1 when nothing shrinks. Pure functions: safe for concurrent use.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "config/job.h"
#include "core/model/spec.h"

namespace dtrain::cli {

// A header line with the totals and the ratio, the overlap's line where it applies, then one line
// per tensor: its name, shape (rows x cols), encoding, bytes and sent bytes.
void PrintCompressionPlan(const config::JobConfig& job, const model::ModelSpec& spec,
                          std::ostream& out);

// {"method", "tensors": [{"name", "rows", "cols", "encoding", "bytes", "sent_bytes"}], "bytes",
// "sent_bytes", "ratio", "overlap_buckets"} (overlap_buckets: 0 where the exchange follows the
// backward pass).
nlohmann::json CompressionPlanJson(const config::JobConfig& job, const model::ModelSpec& spec);

}  // namespace dtrain::cli
