// A job's best model through a real dtraind and the real CLI: with checkpoint.keep_best the
// model of the evaluation with the best metric is kept (its step that evaluation's, read from
// the stored metrics), `dtrain export --best` writes it (from the daemon and from the store
// file), `dtrain eval` of that file on the same held-out rows gives the stored best value, and
// `dtrain status` shows it; a job that keeps none is a not-found error. Once in one process,
// once in a synchronous ring of two workers (the model rank 0 evaluated).
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
#include "integration/daemon_fixture.h"

namespace dtrain::testing {
namespace {

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

// Rank 0's stored values of metric `name`, by step.
std::vector<std::pair<std::int64_t, double>> Stored(const DaemonFixture& d, std::int64_t id,
                                                    const std::string& name) {
  const json reply = d.Request({{"type", "metrics"}, {"id", id}, {"name", name}});
  BOOST_REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
  std::vector<std::pair<std::int64_t, double>> out;
  for (const json& m : reply["metrics"]) {
    if (m["name"] == name && m["worker"] == 0) {
      out.emplace_back(m["step"].get<std::int64_t>(), m["value"].get<double>());
    }
  }
  return out;
}

void CheckKeptBest(const DaemonFixture& d, const std::string& file) {
  const ProcessResult submitted = Dtrain(d, {"submit", file});
  BOOST_REQUIRE_MESSAGE(submitted.exit_code == 0, submitted.err << submitted.out);
  const std::int64_t id = 1;
  const json job = d.Status(id);
  BOOST_REQUIRE_MESSAGE(job["state"] == "succeeded", job.dump());

  // The best evaluation: the first with the lowest stored eval_loss.
  const auto losses = Stored(d, id, "eval_loss");
  BOOST_REQUIRE(losses.size() >= 5u);
  std::int64_t best_step = -1;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [step, loss] : losses) {
    if (loss < best) best_step = step, best = loss;
  }
  BOOST_TEST(job["best_step"] == best_step, job.dump());
  BOOST_TEST(job["best_metric"] == "eval_loss", job.dump());
  BOOST_TEST(job["best_value"].get<double>() == best, job.dump());
  double best_accuracy = std::numeric_limits<double>::quiet_NaN();
  for (const auto& [step, accuracy] : Stored(d, id, "eval_accuracy")) {
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

}  // namespace
}  // namespace dtrain::testing
