// A job process's matrix-product precision (train.precision, core/math/precision.h): set once
// per process, after PrepareBlas and before any product, by every process that trains (dtrain
// run's, and each worker), and by `dtrain validate` before it times convolutions.
#pragma once

#include <string>

#include "config/job.h"
#include "core/status.h"

namespace dtrain::runner {

// Sets this process's products to the job's precision (math::SetPrecision) where this host's CPU
// runs it natively; returns the line for the job's log ("precision: bf16 ... on AMX-BF16 ..."),
// empty for fp32, or the error naming what this host's CPU lacks.
Result<std::string> UsePrecision(const config::JobConfig& job);

}  // namespace dtrain::runner
