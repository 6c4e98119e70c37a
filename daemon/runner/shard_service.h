// ServeShardOfJob: the work of a job's parameter-server process (role "server", process id
// N + s for shard s of a job of N workers). It loads the shard's range of the starting
// parameters — the model's seeded initialisation, or the checkpoint the job resumes from, with
// the optimizer state — accepts the N workers' connections on its listener, and serves them until
// every worker has said goodbye (parameter_shard.h). While it serves, its statistics (pushes
// applied, staleness percentiles) go to `sink` about once a second and at the end.
//
//   Status s = ServeShardOfJob(job, data.spec, placement, resume, recorder);
//
// Blocks; one call per process.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/job.h"
#include "core/dist/link.h"
#include "core/dist/parameter_shard.h"
#include "core/dist/staleness.h"
#include "core/model/spec.h"
#include "core/train/metrics.h"
#include "daemon/runner/training_session.h"
#include "daemon/store/checkpoint.h"

namespace dtrain::runner {

// Every worker's connection to this shard process (its listener), in any order, as links by
// worker rank; `name` (the shard's) starts the errors. Within cluster.timeout_seconds.
Result<std::vector<std::unique_ptr<dist::Link>>> AcceptWorkerLinks(const config::JobConfig& job,
                                                                   const Placement& placement,
                                                                   const std::string& name);

// Runs `serve` while a side thread records `points()` into `sink` about once a second, and once
// more at the end; returns what `serve` returned. `sink` is used by one thread at a time.
Status ServeReporting(train::MetricSink& sink,
                      const std::function<std::vector<train::MetricPoint>()>& points,
                      const std::function<Status()>& serve);

// How a job's shards serve its workers: async in mode "async", sync otherwise.
dist::PsMode PsModeOf(const config::JobConfig& job);

// A shard's staleness metrics at `step`: staleness_p50, staleness_p90, staleness_max,
// staleness_mean, appended to `points`.
void AppendStalenessPoints(std::int64_t step, const dist::StalenessStats& staleness,
                           std::vector<train::MetricPoint>& points);

// The metrics a shard reports (name column of the store): pushes_applied, staleness_p50,
// staleness_p90, staleness_max, staleness_mean, with backup workers pushes_dropped, and in an
// elastic job on several shards steps_undone; their step is the shard's global clock.
Status ServeShardOfJob(const config::JobConfig& job, const model::ModelSpec& spec,
                       const Placement& placement,
                       const std::optional<store::CheckpointData>& resume, train::MetricSink& sink);

}  // namespace dtrain::runner
