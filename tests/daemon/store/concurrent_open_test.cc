// Processes that open one fresh store file at the same moment (`dtrain run` creating its store
// while `dtrain status --db` or a test polls it): every one of them gets a working store.
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "daemon/store/store.h"
#include "daemon/store/store_test_util.h"

namespace dtrain::store {
namespace concurrent_open_test {

BOOST_AUTO_TEST_SUITE(store_concurrent_open)

BOOST_AUTO_TEST_CASE(processes_opening_a_new_file_together_all_get_a_store) {
  testing::TempStoreDir dir;
  constexpr int kProcesses = 6;
  for (int round = 0; round < 20; ++round) {
    const std::string path = dir.Path("fresh" + std::to_string(round) + ".db");
    int go[2];
    BOOST_REQUIRE(::pipe(go) == 0);
    std::vector<pid_t> children;
    for (int p = 0; p < kProcesses; ++p) {
      const pid_t pid = ::fork();
      BOOST_REQUIRE(pid >= 0);
      if (pid == 0) {
        ::close(go[1]);
        char byte;
        if (::read(go[0], &byte, 1) != 0) ::_exit(3);  // waits until every child is ready
        Result<std::unique_ptr<Store>> store = Store::Open(path);
        if (!store.ok()) {
          ::fprintf(stderr, "process %d: %s\n", p, store.status().message().c_str());
          ::_exit(1);
        }
        ::_exit(store.value()->CreateJob(testing::SampleJob("together")).ok() ? 0 : 2);
      }
      children.push_back(pid);
    }
    ::close(go[0]);
    ::close(go[1]);  // every child's read returns at once
    for (const pid_t pid : children) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), "round " << round);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace concurrent_open_test
}  // namespace dtrain::store
