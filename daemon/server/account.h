// Account: the user a job's processes run as — the submitter's uid and primary gid, and the
// supplementary groups this host's user database gives that user — and the environment such a
// process starts with.
//
//   Result<Account> a = ResolveAccount(1001, 1001);   // getpwuid_r + getgrouplist
//   std::vector<std::string> env = JobEnvironment(environ, &a.value());
//
// Groups are resolved on the host that starts the process, when it starts it (as Slurm does), so
// a change of group membership applies from a job's next start. Invariants: the uid has an entry
// in this host's user database, the gid is that user's primary group or one of its supplementary
// groups, and the supplementary groups are the database's (getgrouplist), never a caller's. Safe
// for concurrent use (the lookups are the reentrant ones); they may block on a remote user
// database.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace dtrain::server {

// The gid of a job recorded before gids were (a store from an older dtraind): the user's own.
inline constexpr gid_t kPrimaryGroup = static_cast<gid_t>(-1);

struct Account {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary, `gid` among them
  std::string name;
  std::string home = "/";
  std::string shell = "/bin/sh";
};

// The account of `uid` acting with group `gid` (kPrimaryGroup: its primary group); an error when
// the uid has no account on this host, or the gid is neither its primary group nor one of its
// supplementary groups.
Result<Account> ResolveAccount(uid_t uid, gid_t gid);

// The environment of a job's process: the variables of `from` that configure libraries and
// locales (PATH, LANG, LC_*, TZ, TMPDIR, NO_COLOR, OPENBLAS_*, OMP_*, GOTO_*, the sanitizers'
// *SAN_OPTIONS), nothing else — no daemon's socket, notify socket or credentials — and, for an
// `account`, its HOME, USER, LOGNAME and SHELL (without one, those of `from`).
std::vector<std::string> JobEnvironment(const char* const* from, const Account* account);

// "uid 1001 (alice)", or "uid 1001" without a name.
std::string DescribeAccount(const Account& account);

}  // namespace dtrain::server
