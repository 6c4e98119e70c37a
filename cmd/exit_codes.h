// The dtrain CLI's exit codes (documented in man/dtrain.1, EXIT STATUS). Scripts rely on them:
// never renumber.
#pragma once

namespace dtrain::cli {

inline constexpr int kExitOk = 0;           // success; for `run`, the job succeeded
inline constexpr int kExitFailed = 1;       // the job failed, or an operation failed at run time
inline constexpr int kExitUsage = 2;        // bad command line, invalid job file, bad input data
inline constexpr int kExitInterrupted = 130;  // stopped by SIGINT/SIGTERM after a checkpoint

}  // namespace dtrain::cli
