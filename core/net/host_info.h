// What a process knows of the machine it runs on: its name, as recorded beside worker processes
// (the `host` column of the store's workers table) and as a cluster member's name, and its
// online cores, which size the daemon's capacity and a replica's BLAS threads, and its memory,
// which bounds the models a job may ask for. Also the split of
// a "HOST:PORT" address as configuration and the command line give them, and the IPv4 address
// others can reach this host at (the data plane is IPv4).
//
//   store.RecordWorkerStart(job, rank, "replica", net::LocalHostName(), pid);
//   settings.cores = net::OnlineCores();
//   std::optional<HostPort> a = SplitHostPort("[::1]:7070");   // {"::1", 7070}
//
//   std::optional<std::string> a = RouteSourceIPv4("10.0.0.2");  // "10.0.0.1": our end
//
// LocalHostName is "localhost" when the system cannot say; OnlineCores is at least 1;
// PhysicalMemory is 0 when the system cannot say. All are safe for concurrent use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dtrain::net {

std::string LocalHostName();
int OnlineCores();
std::uint64_t PhysicalMemory();  // bytes of RAM

struct HostPort {
  std::string host;  // a name or an address literal, without an IPv6 address's brackets
  std::uint16_t port = 0;
};
// "HOST:PORT" or "[V6]:PORT" with a port in [1, 65535]; nullopt otherwise (the host itself is
// checked when it is used).
std::optional<HostPort> SplitHostPort(std::string_view text);
// "HOST:PORT", with brackets around an IPv6 address literal.
std::string JoinHostPort(const std::string& host, std::uint16_t port);

// `host` as an IPv4 address literal: itself when it is one, else the first IPv4 address a name
// resolves to; nullopt when it has none (an IPv6 literal, an unknown name).
std::optional<std::string> ResolveIPv4(const std::string& host);
// The local IPv4 address that packets to `host` (a name or an IPv4 literal) leave from: the
// routing table's answer, found without sending anything. nullopt when `host` has no IPv4
// address or no route.
std::optional<std::string> RouteSourceIPv4(const std::string& host);

}  // namespace dtrain::net
