// The dtrain CLI's exit codes (documented in man/dtrain.1, EXIT STATUS), the same for every
// subcommand. Scripts rely on them: never renumber.
//
//   if (reply.error().code == "not_found") return kExitNotFound;
//
// Constants only: safe for concurrent use.
#pragma once

namespace dtrain::cli {

inline constexpr int kExitOk = 0;           // success; for run, submit and wait: the job succeeded
inline constexpr int kExitFailed = 1;       // the job failed, or an operation failed at run time
inline constexpr int kExitUsage = 2;        // bad command line, invalid job file, bad input data
inline constexpr int kExitUnreachable = 3;  // no daemon answers on the control socket
inline constexpr int kExitNotFound = 4;     // the daemon or the store has no such job
inline constexpr int kExitInterrupted = 130;  // SIGINT/SIGTERM, or the job was cancelled

}  // namespace dtrain::cli
