// [train] memory_limit under a real daemon: every process of a job runs with that address-space
// limit (read from /proc); a job that outgrows it fails at once, without restarts, with a reason
// that says where and what the limit is, while the daemon and another job go on untouched; and a
// model larger than the host is refused at submission with its size.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "common/process.h"
#include "integration/daemon_fixture.h"

namespace dtrain::testing {
namespace memory_limit_test {

using json = nlohmann::json;
using namespace std::chrono_literals;

// Two sync replicas that train until cancelled, each limited to 1 GiB.
constexpr const char* kLimitedEndless = R"(name = "limited"
[data]
format = "synthetic"
rows = 4000
features = 32
[model]
type = "mlp"
hidden = [64]
[train]
epochs = 1000000
threads = 1
memory_limit = "1GiB"
[cluster]
workers = 2
mode = "sync"
)";

// The same limit, and 2.4 GiB of data to read.
constexpr const char* kOutgrowsItsLimit = R"(name = "outgrows"
[data]
format = "synthetic"
rows = 10000000
features = 64
[train]
epochs = 1
threads = 1
memory_limit = "1GiB"
[cluster]
workers = 2
mode = "async"
)";

// "Max address space" of /proc/PID/limits: its soft limit.
std::string AddressSpaceLimit(pid_t pid) {
  const std::string limits = ReadFile("/proc/" + std::to_string(pid) + "/limits");
  const std::size_t at = limits.find("Max address space");
  if (at == std::string::npos) return "";
  const std::size_t begin = limits.find_first_not_of(' ', at + 17);
  return limits.substr(begin, limits.find(' ', begin) - begin);
}

BOOST_AUTO_TEST_SUITE(memory_limit)

BOOST_AUTO_TEST_CASE(a_job_over_its_limit_fails_saying_so_and_harms_nothing_else) {
  DaemonFixture d({"--max-jobs", "2", "--cores", "8"});  // both jobs run at once
  const std::int64_t steady = d.Submit(kLimitedEndless);
  json running = d.WaitForState(steady, "running");
  for (int i = 0; i < 500 && running["workers"].size() < 2u; ++i) {  // rows land just after
    std::this_thread::sleep_for(10ms);
    running = d.Status(steady);
  }
  BOOST_REQUIRE(running["workers"].size() == 2u);
  for (const json& w : running["workers"]) {
    BOOST_TEST(AddressSpaceLimit(w["pid"].get<pid_t>()) == "1073741824", w.dump());
  }

  const std::int64_t greedy = d.Submit(kOutgrowsItsLimit);
  const json failed = d.Wait(greedy);
  BOOST_TEST(failed["state"] == "failed", failed.dump());
  const std::string reason = failed["reason"].get<std::string>();
  BOOST_TEST(reason.find("out of memory while reading the job's data (this process may use 1 GiB: "
                         "[train] memory_limit)") != std::string::npos,
             reason);
  BOOST_TEST(reason.find("not restarted") != std::string::npos, reason);
  BOOST_TEST(failed["restarts"] == 0);

  // The other job trains on, and the daemon answers.
  const std::int64_t before = d.Status(steady)["step"].get<std::int64_t>();
  std::this_thread::sleep_for(500ms);
  const json still = d.Status(steady);
  BOOST_TEST(still["state"] == "running", still.dump());
  BOOST_TEST(still["step"].get<std::int64_t>() > before);
  BOOST_TEST(still["restarts"] == 0);
  BOOST_TEST(d.Request({{"type", "version"}})["ok"] == true);
  BOOST_TEST(d.Request({{"type", "cancel"}, {"id", steady}})["job"]["state"] == "cancelled");
}

BOOST_AUTO_TEST_CASE(a_model_larger_than_the_host_is_refused_at_submission) {
  DaemonFixture d;
  const json refused = d.Request({{"type", "submit"},
                                  {"source", "huge.toml"},
                                  {"job_toml",
                                   "[data]\nformat = \"synthetic\"\n[model]\ntype = \"mlp\"\n"
                                   "hidden = [1000000, 1000000]\n[train]\nepochs = 1\n"}});
  BOOST_TEST(refused["ok"] == false);
  BOOST_TEST(refused["code"] == "invalid_job");
  BOOST_REQUIRE(refused["diagnostics"].size() == 1u);
  const json& diagnostic = refused["diagnostics"][0];
  BOOST_TEST(diagnostic["key"] == "model.hidden");
  BOOST_TEST(diagnostic["line"] == 5);
  const std::string message = diagnostic["message"].get<std::string>();
  BOOST_TEST(message.find("needs at least 10.9 TiB per replica") != std::string::npos, message);
  BOOST_TEST(message.find("more than this host's memory") != std::string::npos, message);
  BOOST_TEST(d.Request({{"type", "list"}})["jobs"].empty());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace memory_limit_test
}  // namespace dtrain::testing
