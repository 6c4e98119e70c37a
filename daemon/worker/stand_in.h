// What the local stand-ins of job processes that run elsewhere share (`dtraind remote-worker`
// for a peer's worker, `dtraind slurm-task` for a Slurm task): ending the way the process they
// stand for ended, so the coordinator's supervisor sees that process's own exit.
//
//   return EndLike(status, signal, "worker rank 2 on node-2");
#pragma once

#include <string>

namespace dtrain::worker {

// Returns `exit_status` when `signal` is 0; otherwise prints that `where` was killed by it and
// raises it on this process with its default action (returning 128 + signal only for a signal
// whose default does not end a process).
int EndLike(int exit_status, int signal, const std::string& where);

}  // namespace dtrain::worker
