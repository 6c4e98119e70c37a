// ListenerCaps: how many connections each of dtraind's listeners holds at once, in all and per
// client, and the descriptor limit they are sized against (man/dtraind.8, "Limits"). The
// listeners together never hold more than half of the daemon's descriptors, so that the jobs'
// socket pairs, pipes and launches always find some: with a descriptor limit too small for the
// defaults, every cap is scaled down in proportion (never below 1).
//
//   const std::uint64_t limit = RaiseDescriptorLimit();   // at start, once
//   const ListenerCaps caps = ScaledListenerCaps(limit);
//
// Pure functions but RaiseDescriptorLimit, which changes the process's RLIMIT_NOFILE.
#pragma once

#include <cstdint>

#include "daemon/server/connection_gate.h"

namespace dtrain::server {

struct ListenerCaps {
  // The Unix control socket; a client is a uid (SO_PEERCRED), root exempt from its share.
  ConnectionCaps unix_socket{2048, 256};
  // The TCP listener ([cluster] listen); a client is a local uid (loopback) or a remote address,
  // counted until it has authenticated (the cluster key, or a Slurm task's admitted hello); a
  // local root not at all.
  ConnectionCaps tcp{1024, 64};
  // The HTTP listener ([daemon] http); a client is a local uid (loopback) or a remote address.
  ConnectionCaps http{256, 32};
  // The dashboard's event streams (/api/stream), in all and per client, among http's.
  ConnectionCaps streams{64, 8};

  bool operator==(const ListenerCaps&) const = default;
};

inline constexpr ListenerCaps kDefaultListenerCaps{};

// The descriptors the listeners of kDefaultListenerCaps may hold together, times two.
inline constexpr std::uint64_t kFullCapsDescriptors =
    2 * (kDefaultListenerCaps.unix_socket.total + kDefaultListenerCaps.tcp.total +
         kDefaultListenerCaps.http.total);

// The caps of a daemon allowed `fd_limit` descriptors: the defaults when fd_limit is at least
// kFullCapsDescriptors, else each scaled by fd_limit / kFullCapsDescriptors.
ListenerCaps ScaledListenerCaps(std::uint64_t fd_limit);

// Raises this process's soft RLIMIT_NOFILE to its hard limit; the soft limit then in force.
std::uint64_t RaiseDescriptorLimit();

}  // namespace dtrain::server
