// A sparse job on parameter servers (cluster.mode = "async", Downpour): the service of a shard
// process — a dist::SparseShard of the keys sparse::ShardOfKey gives it, started from its part of
// the checkpoint the job resumes from — and the run of a replica process, training its share of
// the rows through a dist::SparseShardClient. Replica 0 writes the job's checkpoints: the shards'
// tables joined, with its own data position.
//
//   Status s = ServeSparseShardOfJob(job, placement, resume, sink);            // a shard process
//   Result<SparseRunResult> r = RunSparseReplica(job, data, placement, ...);  // a replica
//
// A shard reports, about once a second and at the end: pushes_applied, shard_keys (keys held),
// keys_pushed and keys_pulled (over every request); at the end also peak_rss_bytes. Blocks; one
// call per process.
#pragma once

#include <optional>

#include "config/job.h"
#include "core/train/metrics.h"
#include "daemon/runner/sparse_run.h"
#include "daemon/runner/training_session.h"
#include "daemon/store/checkpoint.h"

namespace dtrain::runner {

Status ServeSparseShardOfJob(const config::JobConfig& job, const Placement& placement,
                             const std::optional<store::CheckpointData>& resume,
                             train::MetricSink& sink);

Result<SparseRunResult> RunSparseReplica(const config::JobConfig& job, const SparseJobData& data,
                                         const Placement& placement, RunRecorder& recorder,
                                         const RunOptions& options,
                                         const store::CheckpointData* resume);

}  // namespace dtrain::runner
