// What `dtrain why` shows of a job, built from its rows in a store alone: the first thing that went
// wrong, the lines printed just before it, the step it happened at, whether and where the loss
// went non-finite, the restarts with their reasons, and what to do next.
//
//   Result<nlohmann::json> why = DiagnoseJob(store, 7, /*log_lines=*/10);
//
// The first cause is the earliest in time of:
//  - a failed process: one killed by a signal, or one that exited with a status other than 0
//    and 130 (worker::kExitStopped: it stopped as asked). A process killed by a signal within
//    kPeerDeathSeconds of an earlier failure is taken instead of it: peers that lose a process fail
//    right after it with an exit status, so the signal is the cause and their exits its
//    consequence;
//  - the first non-finite value of a loss (a metric named *loss or *mse), by step;
//  - the job's cancellation (the event into state cancelled);
//  - the job's failure event, when no process failed (e.g. its data could not be read).
// A job with none of these has cause kind "none". Whatever the cause, a sparse model trained to
// all zeros (its last nonzero_weights 0) adds a "next" naming optimizer.l1. The JSON is
// control_protocol.md's WHY object.
//
// Plain functions over the store (they block on SQLite): call them off an event loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "core/status.h"
#include "daemon/store/store.h"

namespace dtrain::store {

inline constexpr double kPeerDeathSeconds = 2.0;

// The WHY object of job `id`, with at most `log_lines` of the failing process's last lines; an
// error when the store has no such job.
Result<nlohmann::json> DiagnoseJob(Store& store, std::int64_t id, std::size_t log_lines);

}  // namespace dtrain::store
