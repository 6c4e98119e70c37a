// Who is at the other end of an accepted TCP connection, as the listeners' connection caps
// count clients: a process on this host that connected over loopback is its socket's owner
// ("uid 1001", from the kernel's socket table through NETLINK_SOCK_DIAG, as ss(8) shows it),
// anyone else their address ("address 10.0.0.7"; the port is left out, so one host is one
// client). Loopback alone is looked up: a local socket with the same addresses cannot exist
// for a connection from another host.
//
//   std::string who = TcpClient(socket.native_handle());   // "uid 1001", "address 10.0.0.7"
//
// A lookup that fails (no netlink socket allowed, the peer already gone) falls back to the
// address. Blocking but brief (one netlink round trip). Safe for concurrent use.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace dtrain::server {

// The uid owning the peer's socket of connected TCP socket `fd` when the peer is on loopback
// (127.0.0.0/8, ::1, or 127.x mapped into IPv6); nullopt otherwise or when the kernel will not say.
std::optional<uid_t> LoopbackPeerUid(int fd);

// "uid N" for a loopback peer whose owner is known, else "address A" (A without its port;
// "address unknown" when even that is unknown). `uid`, if given, is set to the owner found.
std::string TcpClient(int fd, std::optional<uid_t>* uid = nullptr);

}  // namespace dtrain::server
