// The regroup exchange of an elastic job's replica over its worker channel (control_protocol.md,
// "regroup"): the request up, the agreed membership back. A regroup_now notice read while it waits
// belonged to the round being answered, and is dropped with the answer.
//
//   runner::ElasticReplica replica(job, data, placement, RegroupOverChannel(upstream, timeout));
//
// The function it returns runs on the Upstream's reading thread; `upstream` must outlive it.
#pragma once

#include <chrono>

#include "config/job.h"
#include "daemon/runner/elastic_replica.h"
#include "daemon/worker/upstream.h"

namespace dtrain::worker {

// Sends `regroup` and waits up to `timeout` for the answer.
runner::Coordinate RegroupOverChannel(Upstream& upstream, std::chrono::milliseconds timeout);

// How long a replica of `job` waits for a regroup answer: the coordinator's round ends within
// cluster.timeout_seconds of its start, which may come up to as long after this replica asked.
std::chrono::milliseconds RegroupTimeout(const config::JobConfig& job);

}  // namespace dtrain::worker
