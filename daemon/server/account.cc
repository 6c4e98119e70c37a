#include "daemon/server/account.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>
#include <string_view>

namespace dtrain::server {
namespace {

// Variables a job's process keeps: its libraries' and locale's settings. Prefixes end in '_'.
constexpr std::string_view kKept[] = {"PATH=",
                                      "LANG=",
                                      "LANGUAGE=",
                                      "TZ=",
                                      "TMPDIR=",
                                      "NO_COLOR=",
                                      "LC_",
                                      "OPENBLAS_",
                                      "OMP_",
                                      "GOTO_",
                                      "DNNL_",
                                      "DTRAIN_CONV=",
                                      "DTRAIN_GEMM=",
                                      "SLURM_CONF=",
                                      "ASAN_OPTIONS=",
                                      "UBSAN_OPTIONS=",
                                      "LSAN_OPTIONS=",
                                      "TSAN_OPTIONS=",
                                      "DTRAIN_RECORD_ROWS=",
                                      "DTRAIN_STRAGGLE="};
// The account's own, from `from` when there is no account.
constexpr std::string_view kPersonal[] = {"HOME=", "USER=", "LOGNAME=", "SHELL="};

bool StartsWithAny(std::string_view entry, std::span<const std::string_view> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [entry](std::string_view p) { return entry.substr(0, p.size()) == p; });
}

// The supplementary groups of `name` with `gid` among them.
std::vector<gid_t> GroupsOf(const std::string& name, gid_t gid) {
  std::vector<gid_t> groups(32);
  for (;;) {
    int count = static_cast<int>(groups.size());
    if (::getgrouplist(name.c_str(), gid, groups.data(), &count) >= 0) {
      groups.resize(static_cast<std::size_t>(count));
      return groups;
    }
    if (count <= static_cast<int>(groups.size())) count = static_cast<int>(groups.size()) * 2;
    groups.resize(static_cast<std::size_t>(count));
  }
}

}  // namespace

Result<Account> ResolveAccount(uid_t uid, gid_t gid) {
  long suggested = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(suggested > 0 ? static_cast<std::size_t>(suggested) : 16384);
  passwd entry{};
  passwd* found = nullptr;
  int error = 0;
  while ((error = ::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found)) == ERANGE) {
    buffer.resize(buffer.size() * 2);
  }
  if (found == nullptr) {
    return Status::Error("uid " + std::to_string(uid) + " has no account on this host" +
                         (error != 0 ? std::string(" (") + std::strerror(error) + ")" : ""));
  }
  Account account;
  account.uid = uid;
  account.name = found->pw_name;
  if (found->pw_dir != nullptr && found->pw_dir[0] == '/') account.home = found->pw_dir;
  if (found->pw_shell != nullptr && found->pw_shell[0] == '/') account.shell = found->pw_shell;
  account.groups = GroupsOf(account.name, found->pw_gid);
  account.gid = gid == kPrimaryGroup ? found->pw_gid : gid;
  if (std::find(account.groups.begin(), account.groups.end(), account.gid) ==
      account.groups.end()) {
    return Status::Error("gid " + std::to_string(account.gid) + " is not a group of " +
                         DescribeAccount(account) +
                         " on this host (neither its primary group nor one of its own)");
  }
  return account;
}

std::vector<std::string> JobEnvironment(const char* const* from, const Account* account) {
  std::vector<std::string> env;
  for (const char* const* e = from; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (StartsWithAny(entry, kKept) || (account == nullptr && StartsWithAny(entry, kPersonal))) {
      env.emplace_back(entry);
    }
  }
  if (account != nullptr) {
    env.push_back("HOME=" + account->home);
    env.push_back("SHELL=" + account->shell);
    if (!account->name.empty()) {
      env.push_back("USER=" + account->name);
      env.push_back("LOGNAME=" + account->name);
    }
  }
  return env;
}

std::string DescribeAccount(const Account& account) {
  return "uid " + std::to_string(account.uid) +
         (account.name.empty() ? "" : " (" + account.name + ")");
}

}  // namespace dtrain::server
