#include "cmd/as_job_owner.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/unique_fd.h"
#include "daemon/server/account.h"

namespace dtrain::cli {
namespace {

// Writes all of `bytes` to `fd`; false on an error.
bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// In the child: becomes `account`, runs `work`, and writes 'O' + its value or 'E' + its error.
[[noreturn]] void RunInChild(int out, const server::Account& account,
                             const std::function<Result<std::string>()>& work) {
  std::string reply;
  if (::setgroups(account.groups.size(), account.groups.data()) != 0 ||
      ::setresgid(account.gid, account.gid, account.gid) != 0 ||
      ::setresuid(account.uid, account.uid, account.uid) != 0) {
    reply = std::string("E") + "cannot take the rights of the job's owner: " + std::strerror(errno);
  } else {
    Result<std::string> result = work();
    reply = result.ok() ? "O" + result.value() : "E" + result.status().message();
  }
  ::_exit(WriteAll(out, reply) ? 0 : 1);
}

}  // namespace

Result<std::string> AsJobOwner(std::int64_t owner_uid, std::int64_t owner_gid,
                               const std::function<Result<std::string>()>& work) {
  const uid_t me = ::geteuid();
  if (owner_uid == static_cast<std::int64_t>(me)) return work();
  if (me != 0) {
    return Status::Error("the job belongs to uid " + std::to_string(owner_uid) +
                         "; only its owner or root may read its data");
  }
  const Result<server::Account> account = server::ResolveAccount(
      static_cast<uid_t>(owner_uid),
      owner_gid < 0 ? server::kPrimaryGroup : static_cast<gid_t>(owner_gid));
  if (!account.ok()) {
    return Status::Error("cannot read the job's data as its owner: " + account.status().message());
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return Status::Error(std::string("cannot make a pipe: ") + std::strerror(errno));
  }
  UniqueFd from_child(pipe_fds[0]), to_parent(pipe_fds[1]);
  const pid_t child = ::fork();
  if (child < 0) return Status::Error(std::string("cannot fork: ") + std::strerror(errno));
  if (child == 0) {
    from_child.reset();
    RunInChild(to_parent.get(), account.value(), work);
  }
  to_parent.reset();
  std::string reply;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(from_child.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reply.append(chunk, static_cast<std::size_t>(n));
  }
  from_child.reset();
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || reply.empty()) {
    return Status::Error("the process reading the job's data as its owner did not finish");
  }
  if (reply[0] == 'E') return Status::Error(reply.substr(1));
  return reply.substr(1);
}

}  // namespace dtrain::cli
