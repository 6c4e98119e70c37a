// RunJobInProcess: trains one job in the calling process and records everything in the store —
// state transitions with reasons, metrics, logs, and checkpoints (every checkpoint.every_steps
// steps or every_seconds seconds, on a stop request, and at the end). It is the job runner that
// `dtrain run` hosts; a job that already has checkpoints continues from its newest one.
//
//   std::atomic<bool> stop{false};
//   Result<RunOutcome> r = RunJobInProcess(job, job_id, *store, {.stop = &stop});
//
// The job row must exist (Store::CreateJob) in a state from which it can start: queued, or
// running/recovering left behind by a process that died (it then goes through recovering).
// Blocks until training ends; one call per job at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config/job.h"
#include "core/train/trainer.h"
#include "daemon/runner/job_data.h"
#include "daemon/runner/recorded_training.h"
#include "daemon/store/store.h"

namespace dtrain::runner {

struct RunOutcome {
  store::JobState state = store::JobState::kFailed;
  std::string reason;
  std::int64_t steps = 0;      // optimizer steps completed
  double seconds = 0.0;        // wall time of this call
  std::optional<train::EvalResult> final_eval;  // on the held-out set, if there is one
  std::string eval_name;       // "test" or "validation"
  bool classification = true;
  std::int64_t resumed_from = -1;  // checkpoint step this run started from, -1 if fresh
};

// An error only when the store itself fails; a job that fails (bad data, ...) is an outcome
// with state kFailed and the reason, which is also recorded in the store.
Result<RunOutcome> RunJobInProcess(const config::JobConfig& job, std::int64_t job_id,
                                   store::Store& store, const RunOptions& options);

}  // namespace dtrain::runner
