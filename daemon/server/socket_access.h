// Whether a user may open the daemon's control socket: what a listener that cannot tell a key
// or token from its clients (the dashboard without http_token_file) shows only to the users the
// control socket serves anyway. Decided as the kernel decides connect(2) on the socket file: root
// may; else the write bit of the owner's, the group's or everyone's class, the first class the
// user is in (its owner, one of its groups from this host's user database, anyone).
//
//   if (!MayOpenSocket(1001, "/run/dtrain/dtraind.sock")) { /* 403 */ }
//
// The socket's directories and ACLs are not looked at. Blocking (stat, the user database, which
// may be remote): run it on the blocking pool. Safe for concurrent use.
#pragma once

#include <sys/types.h>

#include <string>

namespace dtrain::server {

bool MayOpenSocket(uid_t uid, const std::string& socket_path);

}  // namespace dtrain::server
