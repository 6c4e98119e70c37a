// Same-host detection for the data plane: two processes may share memory only when they run on
// one kernel (the same boot), in the same network namespace (so that the "hosts" of a test cluster,
// separate network namespaces on one kernel, still talk TCP as real hosts would) and in the same
// IPC namespace (so that a POSIX shared-memory name one creates, the other can open).
//
//   Result<HostIdentity> me = ThisHost();
//   // ... exchange identities with the peer (shm_link.cc does it over the link's TCP connection)
//   if (SameHost(me.value(), theirs)) { /* shared memory */ }
//
// Pure functions over values, and reads of /proc: safe for concurrent use.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace dtrain::dist {

struct HostIdentity {
  std::string boot_id;       // /proc/sys/kernel/random/boot_id: one per kernel boot
  std::uint64_t net_ns = 0;  // inode of /proc/self/ns/net
  std::uint64_t ipc_ns = 0;  // inode of /proc/self/ns/ipc

  bool operator==(const HostIdentity&) const = default;
};

// This process's identity; an error when /proc does not tell.
Result<HostIdentity> ThisHost();

// True when both identities are complete and equal in every field.
bool SameHost(const HostIdentity& a, const HostIdentity& b);

}  // namespace dtrain::dist
