// A root dtraind as a shared machine runs it, for the tests of who may do what: its socket open
// to every user (mode 0666, in a 0755 folder; its state stays the daemon's), a cluster key, one
// job at a time unless the configuration says more, and the CLI run as any user against it.
//
//   TestUser user("dtrain-test-user");
//   SharedDaemon s;                                   // or SharedDaemon s("max_jobs = 2\n");
//   ProcessResult r = s.Cli(user.name(), user.name(), {"status", "3"});
//
// Root only (the CLI runs as other users through setpriv). One thread at a time.
#pragma once

#include <sys/stat.h>

#include <string>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "integration/daemon_fixture.h"
#include "integration/test_user.h"

namespace dtrain::testing {

struct SharedDaemon {
  // `daemon_keys`: more lines of dtraind.toml's [daemon] section (each ending in '\n').
  explicit SharedDaemon(const std::string& daemon_keys = "max_jobs = 1\n")
      : config(ConfigDir().Write("dtraind.toml", "[daemon]\nsocket_mode = \"0666\"\n" +
                                                     daemon_keys + "[cluster]\nkey_file = \"" +
                                                     KeyPath() + "\"\n")),
        d({"--config", config}, bins.dtraind) {
    ::chmod(d.dir().path().c_str(), 0755);  // users reach the socket; state/ stays the daemon's
  }
  static const TempDir& ConfigDir() {
    static TempDir dir;
    return dir;
  }
  static std::string KeyPath() {
    const std::string path = ConfigDir().Write("cluster.key", std::string(64, 'c') + "\n");
    ::chmod(path.c_str(), 0600);
    return path;
  }

  // `dtrain ARGS...` as `user` against this daemon.
  ProcessResult Cli(const std::string& user, const std::string& group,
                    std::vector<std::string> args) const {
    std::vector<std::string> argv = {bins.dtrain, "--socket", d.socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunAs(user, group, argv, ConfigDir().Path(""));
  }

  SharedBinaries bins;
  std::string config;
  DaemonFixture d;
};

// Whether this test runs as root, which these tests need; a message saying it is skipped if not.
inline bool Root() {
  if (::getuid() == 0) return true;
  BOOST_TEST_MESSAGE("skipped: needs root to create a user and to run a system daemon");
  return false;
}

}  // namespace dtrain::testing
