// LocalHostName: this machine's name as recorded beside worker processes (the `host` column of
// the store's workers table) and, later, as a cluster member's name.
//
//   store.RecordWorkerStart(job, rank, "replica", net::LocalHostName(), pid);
//
// "localhost" when the system cannot say. Safe for concurrent use.
#pragma once

#include <string>

namespace dtrain::net {

std::string LocalHostName();

}  // namespace dtrain::net
