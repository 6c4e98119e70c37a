// What a process knows of the machine it runs on: its name, as recorded beside worker processes
// (the `host` column of the store's workers table) and as a cluster member's name, and its
// online cores, which size the daemon's capacity and a replica's BLAS threads. Also the split of
// a "HOST:PORT" address as configuration and the command line give them.
//
//   store.RecordWorkerStart(job, rank, "replica", net::LocalHostName(), pid);
//   settings.cores = net::OnlineCores();
//   std::optional<HostPort> a = SplitHostPort("[::1]:7070");   // {"::1", 7070}
//
// LocalHostName is "localhost" when the system cannot say; OnlineCores is at least 1. All are
// safe for concurrent use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dtrain::net {

std::string LocalHostName();
int OnlineCores();

struct HostPort {
  std::string host;  // a name or an address literal, without an IPv6 address's brackets
  std::uint16_t port = 0;
};
// "HOST:PORT" or "[V6]:PORT" with a port in [1, 65535]; nullopt otherwise (the host itself is
// checked when it is used).
std::optional<HostPort> SplitHostPort(std::string_view text);

}  // namespace dtrain::net
