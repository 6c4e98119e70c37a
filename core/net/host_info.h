// What a process knows of the machine it runs on: its name, as recorded beside worker processes
// (the `host` column of the store's workers table) and as a cluster member's name, and its
// online cores, which size the daemon's capacity and a replica's BLAS threads.
//
//   store.RecordWorkerStart(job, rank, "replica", net::LocalHostName(), pid);
//   settings.cores = net::OnlineCores();
//
// LocalHostName is "localhost" when the system cannot say; OnlineCores is at least 1. Both are
// safe for concurrent use.
#pragma once

#include <string>

namespace dtrain::net {

std::string LocalHostName();
int OnlineCores();

}  // namespace dtrain::net
