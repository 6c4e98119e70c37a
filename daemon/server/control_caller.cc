#include "daemon/server/control_caller.h"

#include <sys/socket.h>

#include <cstdint>
#include <optional>

#include "daemon/server/account.h"
#include "daemon/server/control_request.h"

namespace dtrain::server {

Caller Caller::WorkerChannel() {
  return Caller{static_cast<uid_t>(-1), static_cast<gid_t>(-1), false, false, true, false};
}

Caller Caller::SlurmTaskChannel() {
  return Caller{static_cast<uid_t>(-1), static_cast<gid_t>(-1), false, false, true, true};
}

Caller PeerCaller(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return Caller{};  // unknown: owns nothing, is not root, may only query
  }
  return Caller{cred.uid, cred.gid, true, false, false};
}

Result<Owner> ActingUser(const nlohmann::json& request, const Caller& caller, bool allow_root) {
  if (!caller.names_uid) {
    if (caller.uid == static_cast<uid_t>(-1)) {
      return Status::Error(
          "this daemon does not know who is asking over TCP without a cluster "
          "key: use its Unix socket, or give the daemons [cluster] key_file");
    }
    return Owner{caller.uid, caller.gid};
  }
  const std::optional<std::int64_t> uid = IntField(request, "uid");
  if (!uid || *uid < 0 || *uid >= static_cast<std::int64_t>(static_cast<uid_t>(-1))) {
    return Status::Error("over TCP, a request that acts for a user names its \"uid\"");
  }
  if (*uid == 0 && !allow_root) {
    return Status::Error(
        "uid 0 may not act over TCP on this daemon (its [cluster] allow_root "
        "is false): act as an ordinary user, or use its Unix socket");
  }
  Result<Account> account = ResolveAccount(static_cast<uid_t>(*uid), kPrimaryGroup);
  if (!account.ok()) return account.status();
  return Owner{account.value().uid, account.value().gid};
}

}  // namespace dtrain::server
