// train.early_stopping through a real dtraind and the real CLI: a job whose evaluations plateau
// stops after `patience` evaluations without improvement and succeeds, its reason naming the
// step, the best value and where it was reached; and a job cancelled and resumed from its
// checkpoint ends exactly as the uninterrupted one, because the rule's state travels with the
// checkpoint.
//
// Sparse and L-BFGS jobs stop by the same rule and keep the model of their best evaluation.
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
#include "core/data/click_synthetic.h"
#include "integration/daemon_fixture.h"
#include "integration/stored_metrics.h"

namespace dtrain::testing {
namespace early_stopping_test {

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

// A job whose evaluations cannot improve after the first: min_delta is beyond any change of
// eval_loss, so the first evaluation is the best and the job stops at the evaluation
// `patience` after it, on every CPU. It succeeds, long before its step limit, with the reason,
// and its best model (`dtrain export --best`) is that first evaluation's, the step the
// job's stored eval_loss values give by the rule.
void CheckStopsAtItsBestKeptModel(const DaemonFixture& d, const std::string& text,
                                  std::int64_t first_eval, int patience) {
  const std::int64_t id = d.Submit(text);
  const json job = d.Wait(id);
  BOOST_TEST(job["state"] == "succeeded", job.dump() << d.LogTail(id));
  const auto losses = StoredMetric(d, id, "eval_loss");
  BOOST_REQUIRE(!losses.empty());
  const std::int64_t best = BestStep(losses, true, 1e9);
  BOOST_TEST(best == first_eval);
  const std::int64_t stopped = losses.back().first;
  BOOST_TEST(job["step"].get<std::int64_t>() == stopped, job.dump());
  BOOST_TEST(losses.size() == static_cast<std::size_t>(1 + patience));
  const std::string reason = job["reason"].get<std::string>();
  BOOST_TEST(reason.rfind("stopped early at step " + std::to_string(stopped) + ": best eval_loss ",
                          0) == 0,
             reason);
  BOOST_TEST(reason.find(" at step " + std::to_string(best) +
                         ", no improvement by more than min_delta in " + std::to_string(patience) +
                         " evaluations since") != std::string::npos,
             reason);
  BOOST_TEST(job["best_step"] == best, job.dump());

  const ProcessResult exported =
      Dtrain(d, {"export", std::to_string(id), "--best", "-o", d.dir().Path("best.dtm"), "--json"});
  BOOST_REQUIRE_MESSAGE(exported.exit_code == 0, exported.err);
  BOOST_TEST(json::parse(exported.out)["step"] == best, exported.out);
}

// A sparse logistic model, evaluated every 5 steps of at most 100000.
BOOST_AUTO_TEST_CASE(a_sparse_job_stops_early_and_keeps_its_best_model) {
  DaemonFixture d;
  const std::string train = d.dir().Path("clicks.svm");
  const data::ClickData clicks =
      data::MakeClicks({.rows = 2000, .features = 1u << 12, .nonzeros = 10, .seed = 5});
  BOOST_REQUIRE(data::WriteLibsvm(clicks.rows, train).ok());
  CheckStopsAtItsBestKeptModel(d, R"(name = "early-sparse"
[data]
format = "libsvm"
sparse = true
train = ")" + train + R"("
validation_fraction = 0.2
[model]
type = "logistic"
[train]
steps = 100000
epochs = 0
batch_size = 16
eval_every = 5
early_stopping = { metric = "eval_loss", patience = 2, min_delta = 1e9 }
[optimizer]
type = "sgd"
lr = 0.1
)",
                               5, 2);
}

// L-BFGS on softmax regression, evaluated at every iteration of at most 1000.
BOOST_AUTO_TEST_CASE(an_lbfgs_job_stops_early_and_keeps_its_best_model) {
  DaemonFixture d;
  CheckStopsAtItsBestKeptModel(d, R"(name = "early-lbfgs"
[data]
format = "synthetic"
rows = 2000
test_rows = 500
features = 8
classes = 3
noise = 2.0
[model]
type = "softmax"
[train]
early_stopping = { metric = "eval_loss", patience = 2, min_delta = 1e9 }
[optimizer]
type = "lbfgs"
max_iterations = 1000
gradient_tolerance = 1e-12
loss_tolerance = 1e-15
)",
                               1, 2);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace early_stopping_test
}  // namespace dtrain::testing
