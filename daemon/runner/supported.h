// What this build can run: a valid job file may still ask for a distributed mode that is not
// implemented yet (cluster.workers > 1, or mode sync/async/local). Such a job is refused up front
// with a clear message, instead of silently training one replica.
//
//   Status s = CheckRunnable(job);   // "cluster: mode 'sync' with 4 workers is not available ..."
//
// Pure function: safe for concurrent use.
#pragma once

#include "config/job.h"
#include "core/status.h"

namespace dtrain::runner {

Status CheckRunnable(const config::JobConfig& job);

}  // namespace dtrain::runner
