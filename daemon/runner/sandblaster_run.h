// The three kinds of process of a `mode = "sandblaster"` job (core/dist/sandblaster_protocol.md;
// ranks: config/job_layout.h — workers 0..N-1, shards N..N+S-1, the coordinator N+S):
//   the coordinator runs L-BFGS (RunLbfgs with a SandblasterEngine: its vectors on the shards,
//     its objective evaluated by the workers), records the run and writes its checkpoints;
//   a shard holds its slice of every L-BFGS vector and serves the coordinator and the workers;
//   a worker computes work units on the job's training rows.
// Workers connect to the coordinator and to every shard, the coordinator to every shard; every
// link is the job's authenticated data plane (shared memory on one host). Each call blocks for
// the process's whole run.
//
//   worker:      Status s = RunSandblasterWorkerOfJob(job, data, placement);
//   shard:       Status s = ServeSandblasterShard(job, spec, placement);
//   coordinator: Result<LbfgsRunResult> r = RunSandblasterCoordinator(job, data, placement,
//                                                                     recorder, options, resume);
#pragma once

#include "config/job.h"
#include "core/model/spec.h"
#include "daemon/runner/job_data.h"
#include "daemon/runner/lbfgs_run.h"
#include "daemon/runner/recorder.h"
#include "daemon/runner/training_session.h"
#include "daemon/store/checkpoint.h"

namespace dtrain::runner {

Status RunSandblasterWorkerOfJob(const config::JobConfig& job, const JobData& data,
                                 const Placement& placement);

Status ServeSandblasterShard(const config::JobConfig& job, const model::ModelSpec& spec,
                            const Placement& placement);

// Its iteration metrics add, per pass of the iteration: units_worker_R (the units each worker
// rank computed and kept), backups_issued, backups_won, units_revoked and passes (restarts
// included).
Result<LbfgsRunResult> RunSandblasterCoordinator(const config::JobConfig& job,
                                                 const JobData& data, const Placement& placement,
                                                 RunRecorder& recorder, const RunOptions& options,
                                                 const store::CheckpointData* resume);

}  // namespace dtrain::runner
