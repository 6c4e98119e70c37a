// Fair share among users of a shared root dtraind (daemon/server/fair_share.h, submit_limits.h):
// a freed slot goes to the queued job of the user holding the least, a user at [limits]
// jobs_per_user waits without holding back others, priorities above [limits] max_priority are
// refused unless the user is named in priority_users, and memory limits are bounded and given a
// default. Real users, a real root daemon. Root only: skipped otherwise.
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "integration/shared_daemon.h"
#include "integration/test_user.h"

namespace dtrain::testing {
namespace fair_share_test {

using json = nlohmann::json;

constexpr const char* kHeavy = "dtrain-fs-heavy";  // submits many jobs
constexpr const char* kLight = "dtrain-fs-light";  // submits one, later

// One process on one thread that trains until cancelled.
constexpr const char* kEndless = R"([data]
format = "synthetic"
rows = 2000
features = 8
[model]
type = "softmax"
[train]
epochs = 1000000
threads = 1
)";

struct Lab {
  explicit Lab(const std::string& limits)
      : heavy(kHeavy), light(kLight), s("max_jobs = 2\ncores = 8\n" + limits) {
    ::chmod(files.path().c_str(), 0755);
  }
  std::int64_t Submit(const char* user, const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args = {"submit", job, "--no-wait", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const ProcessResult r = s.Cli(user, user, args);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return json::parse(r.out)["id"].get<std::int64_t>();
  }
  void Cancel(std::int64_t id) const {
    BOOST_REQUIRE(s.d.Request({{"type", "cancel"}, {"id", id}})["ok"] == true);
    s.d.Wait(id);
  }
  std::string State(std::int64_t id) const { return s.d.Status(id)["state"].get<std::string>(); }

  TestUser heavy, light;
  SharedDaemon s;
  TempDir files;
  std::string job = files.Write("endless.toml", kEndless);
};

BOOST_AUTO_TEST_SUITE(fair_share)

BOOST_AUTO_TEST_CASE(a_freed_slot_goes_to_the_user_holding_the_least) {
  if (!Root()) return;
  // This daemon's [limits] has the defaults. Queued of the same priority: heavy's third, then
  // light's; heavy still runs one job when a slot frees, light none: light's job starts.
  Lab lab("[limits]\n");
  const std::int64_t h1 = lab.Submit(kHeavy), h2 = lab.Submit(kHeavy);
  lab.s.d.WaitForState(h1, "running");
  lab.s.d.WaitForState(h2, "running");
  const std::int64_t h3 = lab.Submit(kHeavy);
  const std::int64_t l1 = lab.Submit(kLight);
  lab.Cancel(h2);
  lab.s.d.WaitForState(l1, "running");
  BOOST_TEST(lab.State(h3) == "queued");
  for (const std::int64_t id : {h1, h3, l1}) lab.Cancel(id);
}

BOOST_AUTO_TEST_CASE(a_user_at_jobs_per_user_waits_without_holding_back_others) {
  if (!Root()) return;
  Lab lab("[limits]\njobs_per_user = 1\n");
  const std::int64_t h1 = lab.Submit(kHeavy);
  lab.s.d.WaitForState(h1, "running");
  const std::int64_t h2 = lab.Submit(kHeavy);
  const std::int64_t l1 = lab.Submit(kLight);  // behind h2 in the queue, and a slot is free
  lab.s.d.WaitForState(l1, "running");
  const ProcessResult shown = lab.s.Cli(kLight, kLight, {"status", std::to_string(h2)});
  BOOST_TEST(shown.out.find("jobs_per_user = 1") != std::string::npos, shown.out);
  BOOST_TEST(lab.State(h2) == "queued");
  lab.Cancel(h1);
  lab.s.d.WaitForState(h2, "running");
  for (const std::int64_t id : {h2, l1}) lab.Cancel(id);
}

BOOST_AUTO_TEST_CASE(priority_and_memory_are_bounded_per_daemon) {
  if (!Root()) return;
  Lab lab(std::string("[limits]\nmax_priority = 5\npriority_users = [\"") + kLight +
          "\"]\ndefault_memory_limit = \"2GiB\"\nmax_memory_limit = \"4GiB\"\n");
  const auto refused = [&](const char* user, std::vector<std::string> extra, const std::string& says) {
    std::vector<std::string> args = {"submit", lab.job, "--no-wait"};
    args.insert(args.end(), extra.begin(), extra.end());
    const ProcessResult r = lab.s.Cli(user, user, args);
    BOOST_TEST(r.exit_code != 0, user << ": " << r.out);
    BOOST_TEST(r.err.find(says) != std::string::npos, r.err);
  };
  refused(kHeavy, {"--priority", "100"}, "priority 100 is above the 5");
  refused(kHeavy, {"--set", "train.memory_limit=\"1000TiB\""}, "max_memory_limit = 4 GiB");
  // Within the bounds, and for a user allowed to raise priorities.
  const std::int64_t five = lab.Submit(kHeavy, {"--priority", "5"});
  const std::int64_t urgent = lab.Submit(kLight, {"--priority", "100"});
  const std::int64_t sized = lab.Submit(kHeavy, {"--set", "train.memory_limit=\"3GiB\""});
  // A job that sets no limit runs under the default: its process's address space is bounded.
  json running = lab.s.d.WaitForState(urgent, "running");
  for (int i = 0; i < 500 && running["workers"].empty(); ++i) {  // its row lands just after
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    running = lab.s.d.Status(urgent);
  }
  BOOST_REQUIRE(!running["workers"].empty());
  const std::string limits =
      ReadFile("/proc/" + std::to_string(running["workers"][0]["pid"].get<int>()) + "/limits");
  BOOST_TEST(limits.find(std::to_string(std::uint64_t{2} << 30)) != std::string::npos, limits);
  for (const std::int64_t id : {five, urgent, sized}) lab.Cancel(id);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace fair_share_test
}  // namespace dtrain::testing
