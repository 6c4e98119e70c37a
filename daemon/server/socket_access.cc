#include "daemon/server/socket_access.h"

#include <sys/stat.h>

#include <algorithm>

#include "daemon/server/account.h"

namespace dtrain::server {

bool MayOpenSocket(uid_t uid, const std::string& socket_path) {
  struct stat socket {};
  if (::stat(socket_path.c_str(), &socket) != 0) return false;
  if (uid == 0) return true;
  if (uid == socket.st_uid) return (socket.st_mode & S_IWUSR) != 0;
  const Result<Account> account = ResolveAccount(uid, kPrimaryGroup);
  const bool in_group =
      account.ok() && (account.value().gid == socket.st_gid ||
                       std::ranges::find(account.value().groups, socket.st_gid) !=
                           account.value().groups.end());
  return (socket.st_mode & (in_group ? S_IWGRP : S_IWOTH)) != 0;
}

}  // namespace dtrain::server
