// Launch and StartProcess: how one process of a job starts — as which user, with which inherited
// connection, which secret on its standard input, which address-space limit and which environment.
//
//   Launch l{.argv = {exe, "worker", "--job", "3", "--rank", "0", ...}};
//   l.account = ResolveAccount(owner_uid, owner_gid).value();  // setgroups, setgid, setuid
//   l.connection = channel_fd;           // becomes fd 3 of the child
//   l.secret = R"({"token":"..."})";     // the child reads it from stdin, then EOF
//   Result<pid_t> pid = StartProcess(l, out_fd, err_fd);
//
// The child is the leader of a new process group, has default signal dispositions and an empty
// signal mask, and holds no descriptor but 0 (a pipe with the secret), 1 and 2 (`out` and `err`)
// and 3 (the connection, when given): everything else the caller has open is closed before it
// runs, so a job's process never inherits the daemon's store, sockets or key. Secrets travel
// only through that pipe and that connection, never on the command line or in the environment.
// With an account, the credentials change before the exec (raw system calls: only the child's
// one thread exists), and StartProcess fails with the reason when the change was refused (no
// CAP_SETUID/CAP_SETGID). The child works in "/" (every path a job names is absolute). Safe for
// concurrent use; it forks.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "daemon/server/account.h"

namespace dtrain::server {

// The descriptor a job's process finds its coordinator connection on.
inline constexpr int kConnectionFd = 3;

struct Launch {
  std::vector<std::string> argv;  // argv[0]: the program's path
  std::optional<Account> account;  // none: the caller's own user
  int connection = -1;             // the child's fd 3; the caller keeps (and closes) its copy
  std::string secret;              // the child's whole standard input
  std::uint64_t address_space = 0;       // RLIMIT_AS in bytes; 0: unlimited
  std::vector<std::string> environment;  // NAME=value: all the child gets
};

// Starts `launch` with stdout on `out` and stderr on `err` (the caller keeps and closes both).
Result<pid_t> StartProcess(const Launch& launch, int out, int err);

}  // namespace dtrain::server
