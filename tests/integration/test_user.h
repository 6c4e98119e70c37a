// A real second user for tests that check a job runs with its submitter's rights: the account
// (created for the test unless it exists, removed afterwards if created), commands run as it
// (setpriv), and dtraind/dtrain copied where every user may run them (the build tree may sit
// under a private home). Root only: useradd and setpriv need it.
//
//   TestUser user;                 // dtrain-test-user, with its own group (tests that may run at
//                                  // once use different names: one may remove its user; so
//                                  // suites labelled "long", a ctest entry of their own, never
//                                  // use this default)
//   SharedBinaries bins;           // bins.dtraind, bins.dtrain: mode 0755 in a 0755 folder
//   ProcessResult r = RunAs(kUserName, kUserName, {bins.dtrain, "status"}, dir);
//
// One thread at a time.
#pragma once

#include <boost/test/unit_test.hpp>

#include <pwd.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "integration/daemon_fixture.h"

namespace dtrain::testing {

inline constexpr const char* kUserName = "dtrain-test-user";

class TestUser {
 public:
  explicit TestUser(std::string name = kUserName) : name_(std::move(name)) {
    if (::getpwnam(name_.c_str()) == nullptr) {
      created_ = RunProcess({"/usr/sbin/useradd", "--system", "--no-create-home", "--shell",
                             "/usr/sbin/nologin", "--user-group", name_},
                            "/tmp")
                     .exit_code == 0;
    }
    const passwd* entry = ::getpwnam(name_.c_str());
    BOOST_REQUIRE_MESSAGE(entry != nullptr, "cannot create the user " << name_);
    uid_ = entry->pw_uid;
    gid_ = entry->pw_gid;
  }
  ~TestUser() {
    if (created_) RunProcess({"/usr/sbin/userdel", name_}, "/tmp");
  }
  TestUser(const TestUser&) = delete;
  TestUser& operator=(const TestUser&) = delete;
  const std::string& name() const { return name_; }
  uid_t uid() const { return uid_; }
  gid_t gid() const { return gid_; }

 private:
  std::string name_;
  bool created_ = false;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
};

// `argv` as run by `user` (a name) with its groups, through setpriv(1).
inline std::vector<std::string> AsUser(const std::string& user, const std::string& group,
                                       const std::vector<std::string>& argv) {
  std::vector<std::string> full = {"/usr/bin/setpriv", "--reuid=" + user, "--regid=" + group,
                                   "--init-groups", "--"};
  full.insert(full.end(), argv.begin(), argv.end());
  return full;
}

inline ProcessResult RunAs(const std::string& user, const std::string& group,
                           const std::vector<std::string>& argv, const std::string& dir) {
  return RunProcess(AsUser(user, group, argv), dir);
}

struct SharedBinaries {
  SharedBinaries() {
    ::chmod(dir.path().c_str(), 0755);
    std::filesystem::copy_file(EnvPath("DTRAIND_BIN"), dtraind);
    std::filesystem::copy_file(EnvPath("DTRAIN_BIN"), dtrain);
    ::chmod(dtraind.c_str(), 0755);
    ::chmod(dtrain.c_str(), 0755);
  }
  TempDir dir;
  std::string dtraind = dir.Path("dtraind");
  std::string dtrain = dir.Path("dtrain");
};

}  // namespace dtrain::testing
