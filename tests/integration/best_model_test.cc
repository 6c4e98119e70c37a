// A job's best model through a real dtraind and the real CLI: with checkpoint.keep_best the
// model of the evaluation with the best metric is kept (its step that evaluation's, read from
// the stored metrics), `dtrain export --best` writes it (from the daemon and from the store
// file), `dtrain eval` of that file on the same held-out rows gives the stored best value, and
// `dtrain status` shows it; a job that keeps none is a not-found error. Once in one process,
// once in a synchronous ring of two workers (the model rank 0 evaluated); the same for a sparse
// model (in one process, and on parameter servers in sync mode) and for L-BFGS (in one process,
// and on Sandblaster).
//
// Only relations are asserted: which evaluation is best depends on the CPU's rounding, that the
// kept model is that evaluation's does not.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/process.h"
#include "core/data/click_synthetic.h"
#include "integration/daemon_fixture.h"
#include "integration/stored_metrics.h"

namespace dtrain::testing {
namespace best_model_test {

using json = nlohmann::json;

// A small MLP on generated blobs with a large learning rate (its held-out loss goes down and up),
// evaluated every 10 steps on 500 held-out rows.
std::string Job(const std::string& cluster) {
  return R"(name = "best"
[data]
format = "synthetic"
synthetic = "blobs"
rows = 2000
test_rows = 500
features = 6
classes = 3
[model]
type = "mlp"
hidden = [16]
[train]
steps = 200
epochs = 0
batch_size = 16
threads = 1
eval_every = 10
[optimizer]
type = "sgd"
lr = 0.5
[checkpoint]
keep_best = "eval_loss"
)" + cluster;
}

ProcessResult Dtrain(const DaemonFixture& d, std::vector<std::string> args) {
  args.insert(args.begin(), {EnvPath("DTRAIN_BIN"), "--socket", d.socket()});
  return RunProcess(args, d.dir().Path(""));
}

// `evaluator`: the rank whose evaluations judge the best model.
void CheckKeptBest(const DaemonFixture& d, const std::string& file, int evaluator = 0) {
  const ProcessResult submitted = Dtrain(d, {"submit", file});
  BOOST_REQUIRE_MESSAGE(submitted.exit_code == 0, submitted.err << submitted.out);
  const std::int64_t id = 1;
  const json job = d.Status(id);
  BOOST_REQUIRE_MESSAGE(job["state"] == "succeeded", job.dump());

  // The best evaluation: the first with the lowest stored eval_loss.
  const auto losses = StoredMetric(d, id, "eval_loss", evaluator);
  BOOST_REQUIRE(losses.size() >= 5u);
  const std::int64_t best_step = BestStep(losses, true, 0.0);
  double best = std::numeric_limits<double>::quiet_NaN();
  for (const auto& [step, loss] : losses) {
    if (step == best_step) best = loss;
  }
  BOOST_TEST(job["best_step"] == best_step, job.dump());
  BOOST_TEST(job["best_metric"] == "eval_loss", job.dump());
  BOOST_TEST(job["best_value"].get<double>() == best, job.dump());
  double best_accuracy = std::numeric_limits<double>::quiet_NaN();
  for (const auto& [step, accuracy] : StoredMetric(d, id, "eval_accuracy", evaluator)) {
    if (step == best_step) best_accuracy = accuracy;
  }

  const ProcessResult status = Dtrain(d, {"status", "1", "--json"});
  BOOST_REQUIRE_MESSAGE(status.exit_code == 0, status.err);
  BOOST_TEST(json::parse(status.out)["best_step"] == best_step, status.out);
  const ProcessResult human = Dtrain(d, {"status", "1"});
  BOOST_TEST(human.out.find("best      eval_loss ") != std::string::npos, human.out);
  BOOST_TEST(human.out.find(" at step " + std::to_string(best_step) + "\n") != std::string::npos,
             human.out);

  // From the daemon and from the store file: the same model, that evaluation's.
  const std::string db = d.dir().Path("state/dtrain.db");
  for (const std::vector<std::string>& where :
       {std::vector<std::string>{}, std::vector<std::string>{"--db", db}}) {
    const std::string model = d.dir().Path(where.empty() ? "daemon.dtm" : "db.dtm");
    std::vector<std::string> args = {"export", "1", "--best", "-o", model, "--json"};
    args.insert(args.end(), where.begin(), where.end());
    const ProcessResult exported = Dtrain(d, args);
    BOOST_REQUIRE_MESSAGE(exported.exit_code == 0, exported.err);
    BOOST_TEST(json::parse(exported.out)["step"] == best_step, exported.out);
    const ProcessResult evaluated = Dtrain(d, {"eval", model, file, "--json"});
    BOOST_REQUIRE_MESSAGE(evaluated.exit_code == 0, evaluated.err);
    const json e = json::parse(evaluated.out);
    BOOST_TEST(e["accuracy"].get<double>() == best_accuracy, evaluated.out);
    BOOST_TEST(std::abs(e["loss"].get<double>() - best) <= 1e-6 * std::abs(best), evaluated.out);
  }
}

BOOST_AUTO_TEST_SUITE(best_model)

BOOST_AUTO_TEST_CASE(a_single_process_job_keeps_the_best_evaluations_model) {
  DaemonFixture d;
  CheckKeptBest(d, d.dir().Write("job.toml", Job("")));
}

BOOST_AUTO_TEST_CASE(a_sync_ring_job_keeps_rank_0s_best_model) {
  DaemonFixture d;
  CheckKeptBest(d, d.dir().Write("job.toml", Job("[cluster]\nworkers = 2\nmode = \"sync\"\n")));
}

// A sparse logistic model on generated clicks, its held-out rows a fifth of the file's.
std::string SparseJob(const DaemonFixture& d, const std::string& cluster) {
  const std::string train = d.dir().Path("clicks.svm");
  const data::ClickData clicks =
      data::MakeClicks({.rows = 2000, .features = 1u << 12, .nonzeros = 10, .seed = 5});
  BOOST_REQUIRE(data::WriteLibsvm(clicks.rows, train).ok());
  return R"(name = "best-sparse"
[data]
format = "libsvm"
sparse = true
train = ")" +
         train +
         R"("
validation_fraction = 0.2
[model]
type = "logistic"
[train]
steps = 150
epochs = 0
batch_size = 16
eval_every = 10
[optimizer]
type = "sgd"
lr = 0.5
[checkpoint]
keep_best = "eval_loss"
)" + cluster;
}

BOOST_AUTO_TEST_CASE(a_sparse_job_keeps_the_best_evaluations_model) {
  DaemonFixture d;
  CheckKeptBest(d, d.dir().Write("job.toml", SparseJob(d, "")));
}

// The shards hold the model replica 0 evaluated until it pushes the next step.
BOOST_AUTO_TEST_CASE(a_sparse_sync_job_keeps_replica_0s_best_model_from_the_shards) {
  DaemonFixture d;
  CheckKeptBest(d,
                d.dir().Write("job.toml", SparseJob(d,
                                                    "[cluster]\nworkers = 2\nmode = \"sync\"\n"
                                                    "allreduce = \"ps\"\ntimeout_seconds = 30\n")));
}

// Softmax regression by L-BFGS, evaluated at every iteration: in one process, and on Sandblaster
// (the coordinator gathers x from the shards to evaluate it).
std::string LbfgsJob(const std::string& cluster) {
  return R"(name = "best-lbfgs"
[data]
format = "synthetic"
rows = 2000
test_rows = 500
features = 8
classes = 3
noise = 2.0
[model]
type = "softmax"
[optimizer]
type = "lbfgs"
max_iterations = 20
[checkpoint]
keep_best = "eval_loss"
)" + cluster;
}

BOOST_AUTO_TEST_CASE(an_lbfgs_job_keeps_the_best_iterations_model) {
  DaemonFixture d;
  CheckKeptBest(d, d.dir().Write("job.toml", LbfgsJob("")));
}

BOOST_AUTO_TEST_CASE(a_sandblaster_job_keeps_the_coordinators_best_model) {
  DaemonFixture d;
  const std::string file = d.dir().Write(
      "job.toml", LbfgsJob("[cluster]\nmode = \"sandblaster\"\nworkers = 2\nservers = 2\n"
                           "timeout_seconds = 30\n"));
  CheckKeptBest(d, file, 4);  // the coordinator, after 2 workers and 2 shards
}

BOOST_AUTO_TEST_CASE(a_job_without_one_is_not_found) {
  DaemonFixture d;
  const std::string file = d.dir().Write("job.toml", Job(""));
  const ProcessResult submitted = Dtrain(d, {"submit", file, "--set", "train.steps=20"});
  BOOST_REQUIRE_MESSAGE(submitted.exit_code == 0, submitted.err);
  // A job file without the key: nothing kept, so nothing to export.
  std::string plain = Job("");
  plain.erase(plain.find("[checkpoint]"));
  const ProcessResult other = Dtrain(d, {"submit", d.dir().Write("plain.toml", plain)});
  BOOST_REQUIRE_MESSAGE(other.exit_code == 0, other.err);
  const json job = d.Status(2);
  BOOST_TEST(job["best_step"].is_null(), job.dump());
  BOOST_TEST(job["best_value"].is_null(), job.dump());
  BOOST_TEST(job["best_metric"].is_null(), job.dump());
  const ProcessResult exported = Dtrain(d, {"export", "2", "--best", "-o", d.dir().Path("m.dtm")});
  BOOST_TEST(exported.exit_code == 4, exported.err);
  BOOST_TEST(exported.err.find("has no best model") != std::string::npos, exported.err);
  const ProcessResult from_db = Dtrain(d, {"export", "2", "--best", "-o", d.dir().Path("m.dtm"),
                                           "--db", d.dir().Path("state/dtrain.db")});
  BOOST_TEST(from_db.exit_code == 4, from_db.err);
  BOOST_TEST(from_db.err.find("has no best model") != std::string::npos, from_db.err);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace best_model_test
}  // namespace dtrain::testing
