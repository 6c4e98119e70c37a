// Work on a job's files done with the rights of the job's owner, never the caller's: root may
// export anyone's job, but what the export reads of the job's data (the training rows its feature
// scaling is fitted on) must be what the owner could read, or re-pointing a data path at a
// root-only file would copy that file into a model for anyone.
//
//   Result<std::string> bytes = AsJobOwner(owner_uid, owner_gid, [&] { return Work(); });
//
// When the caller is the owner, `work` runs here. When the caller is root, it runs in a forked
// child that first takes the owner's uid, gid and supplementary groups (this host's user
// database; a uid without an account is refused), and its result comes back through a pipe.
// Anyone else is refused. `work` must not rely on threads of this process (the child has one).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "core/status.h"

namespace dtrain::cli {

// `owner_gid` -1: the owner's primary group.
Result<std::string> AsJobOwner(std::int64_t owner_uid, std::int64_t owner_gid,
                               const std::function<Result<std::string>()>& work);

}  // namespace dtrain::cli
