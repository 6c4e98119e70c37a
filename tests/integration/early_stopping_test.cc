// train.early_stopping through a real dtraind and the real CLI: a job whose evaluations plateau
// stops after `patience` evaluations without improvement and succeeds, its reason naming the
// step, the best value and where it was reached; and a job cancelled and resumed from its
// checkpoint ends exactly as the uninterrupted one, because the rule's state travels with the
// checkpoint.
//
// The plateau is deterministic, not a matter of one CPU's rounding: optimizer.lr = 1e-30 leaves
// every weight as it was (an update 1e-30 times a gradient is far below a float's resolution at
// the weights' magnitude), so every evaluation's loss is within min_delta = 0.001 of the first's:
// the first evaluation (step 1) is the best and the job stops at step 1 + patience.
#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/process.h"
#include "integration/daemon_fixture.h"

namespace dtrain::testing {
namespace {

using json = nlohmann::json;

constexpr int kPatience = 1000;

// Slow enough steps (a wide MLP, 1000 held-out rows evaluated at every step) that a test can
// cancel the job while it runs; a checkpoint every 50 steps.
std::string Job() {
  return R"(name = "early"
[data]
format = "synthetic"
synthetic = "blobs"
rows = 4000
test_rows = 1000
features = 64
classes = 4
[model]
type = "mlp"
hidden = [256, 256]
[optimizer]
type = "sgd"
lr = 1e-30
[checkpoint]
every_steps = 50
[train]
batch_size = 64
threads = 1
epochs = 1000000
eval_every = 1
early_stopping = { metric = "eval_loss", patience = )" +
         std::to_string(kPatience) + R"(, min_delta = 0.001 }
)";
}

ProcessResult Dtrain(const DaemonFixture& d, std::vector<std::string> args) {
  args.insert(args.begin(), {EnvPath("DTRAIN_BIN"), "--socket", d.socket()});
  return RunProcess(args, d.dir().Path(""));
}

// What a job stopped at step 1 + kPatience, with its best at step 1, says.
void CheckStoppedEarly(const json& job, const DaemonFixture& d) {
  const std::int64_t id = job["id"].get<std::int64_t>();
  BOOST_TEST(job["state"] == "succeeded", job.dump() << d.LogTail(id));
  const std::string reason = job["reason"].get<std::string>();
  const std::string stop = "stopped early at step " + std::to_string(1 + kPatience) + ": ";
  BOOST_TEST(reason.rfind(stop + "best eval_loss ", 0) == 0, reason);
  BOOST_TEST(reason.find(" at step 1, no improvement by more than min_delta in " +
                         std::to_string(kPatience) + " evaluations since") != std::string::npos,
             reason);
  BOOST_TEST(job["step"].get<std::int64_t>() == 1 + kPatience, job.dump());
}

BOOST_AUTO_TEST_SUITE(early_stopping)

BOOST_AUTO_TEST_CASE(a_plateaued_job_stops_early_and_succeeds_with_the_reason) {
  DaemonFixture d;
  const std::int64_t id = d.Submit(Job());
  CheckStoppedEarly(d.Wait(id), d);
}

BOOST_AUTO_TEST_CASE(a_cancelled_and_resumed_job_keeps_its_early_stopping_state) {
  DaemonFixture d;
  const std::int64_t id = d.Submit(Job());
  // Past a checkpoint whose state has a best (step 1) and evaluations since it.
  const json running = d.WaitForStep(id, 60);
  BOOST_REQUIRE_MESSAGE(running["state"] == "running", running.dump());
  BOOST_REQUIRE(d.Request({{"type", "cancel"}, {"id", id}})["ok"] == true);
  BOOST_REQUIRE(d.Wait(id)["state"] == "cancelled");
  const json checkpoints = d.Request({{"type", "checkpoints"}, {"id", id}});
  BOOST_REQUIRE_MESSAGE(!checkpoints["checkpoints"].empty(), checkpoints.dump());
  const std::int64_t resumed_at = checkpoints["checkpoints"].back()["step"].get<std::int64_t>();
  BOOST_REQUIRE(resumed_at >= 50);
  BOOST_REQUIRE(resumed_at < 1 + kPatience);

  // Had the state been lost, the resumed run's first evaluation would be its best and it would
  // stop at resumed_at + 1 + kPatience.
  const ProcessResult resumed = Dtrain(d, {"resume", std::to_string(id), "--json"});
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  CheckStoppedEarly(d.Status(id), d);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace dtrain::testing
