// End to end through the real binary: three tiny jobs run with `dtrain run --db`, differing in
// optimizer.lr (and one in train.batch_size), compared with `dtrain compare --db`: the differing
// settings are exactly those keys, each job's final and best value are those its own metrics
// (`dtrain metrics --format json`) hold, the plot has a legend line per job, and what compare
// refuses: an unknown job (exit 4, as metrics), a metric none of them recorded (exit 2, with
// the near name), fewer than two jobs, a job named twice.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <set>
#include <string>
#include <vector>

#include "cmd/run_checks.h"
#include "common/process.h"
#include "common/temp_dir.h"

namespace dtrain::cli {
namespace compare_test {

using run_checks::Bin;
using run_checks::ParseJson;
using testing::ProcessResult;
using testing::RunProcess;
using testing::TempDir;

// 600 rows of blobs, two epochs: an evaluation at the end of each.
constexpr const char* kJob = R"(name = "blobs-compare"
[data]
format = "synthetic"
synthetic = "blobs"
rows = 600
test_rows = 200
features = 4
classes = 3
noise = 1.5
[model]
type = "mlp"
hidden = [8]
[train]
epochs = 2
batch_size = 32
seed = 3
[optimizer]
type = "momentum"
)";

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Jobs 1..3 in one store: lr 0.01, lr 0.2, lr 0.01 with batch_size 64.
struct ThreeRuns {
  TempDir dir;
  std::string db = dir.Path("runs.db");

  ThreeRuns() {
    const std::string job = dir.Write("job.toml", kJob);
    for (const std::vector<std::string>& sets : {std::vector<std::string>{"optimizer.lr=0.01"},
                                                 {"optimizer.lr=0.2"},
                                                 {"optimizer.lr=0.01", "train.batch_size=64"}}) {
      std::vector<std::string> args = {Bin(), "run", job, "--db", db};
      for (const std::string& s : sets) args.insert(args.end(), {"--set", s});
      const ProcessResult r = RunProcess(args, dir.Path(""));
      BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    }
  }

  ProcessResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), {Bin(), "compare"});
    args.insert(args.end(), {"--db", db});
    return RunProcess(args, dir.Path(""));
  }

  // The job's eval_accuracy rows as `dtrain metrics --format json` prints them.
  std::vector<nlohmann::json> Recorded(int job) {
    const ProcessResult r = RunProcess({Bin(), "metrics", std::to_string(job), "--name",
                                        "eval_accuracy", "--format", "json", "--db", db},
                                       dir.Path(""));
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    std::vector<nlohmann::json> rows;
    for (const nlohmann::json& row : ParseJson(r)) {
      if (row["name"] == "eval_accuracy") rows.push_back(row);
    }
    return rows;
  }
};

std::set<std::string> Keys(const nlohmann::json& object) {
  std::set<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.insert(key);
  return keys;
}

BOOST_AUTO_TEST_SUITE(compare)

BOOST_AUTO_TEST_CASE(the_differing_settings_and_the_values_the_jobs_recorded) {
  ThreeRuns runs;
  const ProcessResult r = runs.Run({"1", "2", "3", "--name", "eval_accuracy", "--json"});
  BOOST_TEST(r.exit_code == 0, r.err);
  const nlohmann::json c = ParseJson(r);
  BOOST_TEST(c["metric"] == "eval_accuracy");
  BOOST_TEST(c["goal"] == "max");
  BOOST_TEST((Keys(c["differing"]) == std::set<std::string>{"optimizer.lr", "train.batch_size"}));
  BOOST_TEST(c["differing"]["optimizer.lr"] == nlohmann::json::parse("[0.01, 0.2, 0.01]"));
  BOOST_TEST(c["differing"]["train.batch_size"] == nlohmann::json::parse("[32, 32, 64]"));
  BOOST_REQUIRE(c["jobs"].size() == 3u);
  for (int i = 0; i < 3; ++i) {
    const nlohmann::json& job = c["jobs"][i];
    BOOST_TEST_CONTEXT(job.dump()) {
      BOOST_TEST(job["id"] == i + 1);
      BOOST_TEST(job["name"] == "blobs-compare");
      BOOST_TEST(job["state"] == "succeeded");
      BOOST_TEST(job["steps"] == 2 * (i == 2 ? 10 : 19));  // ceil(600 / batch) per epoch
      BOOST_TEST(!job.contains("points"));
      const std::vector<nlohmann::json> rows = runs.Recorded(i + 1);
      BOOST_REQUIRE(rows.size() >= 2u);  // an evaluation per epoch
      BOOST_TEST(job["final"] == rows.back()["value"]);
      const auto best =
          std::max_element(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
            return a["value"].template get<double>() < b["value"].template get<double>();
          });
      BOOST_TEST(job["best"] == (*best)["value"]);
      BOOST_TEST(job["best_step"] == (*best)["step"]);
    }
  }

  // Two jobs that differ in lr only.
  const ProcessResult two = runs.Run({"1", "2", "--name", "eval_accuracy", "--json", "--plot"});
  BOOST_TEST(two.exit_code == 0, two.err);
  const nlohmann::json pair = ParseJson(two);
  BOOST_TEST((Keys(pair["differing"]) == std::set<std::string>{"optimizer.lr"}));
  BOOST_TEST(pair["jobs"][0]["points"].size() == runs.Recorded(1).size());

  // The table: the differing keys as columns, a row per job.
  const ProcessResult table = runs.Run({"3", "1", "2", "--name", "eval_loss"});
  BOOST_TEST(table.exit_code == 0, table.err);
  BOOST_TEST(Contains(table.out, "eval_loss of 3 jobs (lower is better)"), table.out);
  BOOST_TEST(Contains(table.out, "optimizer.lr"));
  BOOST_TEST(Contains(table.out, "train.batch_size"));
  BOOST_TEST(Contains(table.out, "blobs-compare"));
}

BOOST_AUTO_TEST_CASE(the_plot_overlays_every_job_with_a_legend_line_each) {
  ThreeRuns runs;
  const ProcessResult r = runs.Run({"1", "2", "3", "--name", "eval_accuracy", "--plot"});
  BOOST_TEST(r.exit_code == 0, r.err);
  // Not a terminal: no colour, so each job has its own marker.
  BOOST_TEST(Contains(r.out, "eval_accuracy: 3 series, steps "), r.out);
  BOOST_TEST(Contains(r.out, "\n  * job 1 (blobs-compare): "));
  BOOST_TEST(Contains(r.out, "\n  + job 2 (blobs-compare): "));
  BOOST_TEST(Contains(r.out, "\n  o job 3 (blobs-compare): "));
  BOOST_TEST(!Contains(r.out, "job 4"));
}

BOOST_AUTO_TEST_CASE(what_compare_refuses) {
  ThreeRuns runs;
  const ProcessResult unknown = runs.Run({"1", "9", "--name", "eval_accuracy"});
  BOOST_TEST(unknown.exit_code == 4);
  BOOST_TEST(Contains(unknown.err, "has no job 9"), unknown.err);

  const ProcessResult typo = runs.Run({"1", "2", "--name", "eval_acuracy"});
  BOOST_TEST(typo.exit_code == 2);
  BOOST_TEST(Contains(typo.err, "none of jobs 1, 2 recorded a metric named 'eval_acuracy'"),
             typo.err);
  BOOST_TEST(Contains(typo.err, "(did you mean --name eval_accuracy?)"), typo.err);

  const ProcessResult one = runs.Run({"1", "--name", "eval_accuracy"});
  BOOST_TEST(one.exit_code == 2);
  BOOST_TEST(Contains(one.err, "compare needs at least 2 jobs"), one.err);

  const ProcessResult twice = runs.Run({"1", "2", "1", "--name", "eval_accuracy"});
  BOOST_TEST(twice.exit_code == 2);
  BOOST_TEST(Contains(twice.err, "job 1 is named twice"), twice.err);

  const ProcessResult no_name =
      RunProcess({Bin(), "compare", "1", "2", "--db", runs.db}, runs.dir.Path(""));
  BOOST_TEST(no_name.exit_code == 2);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace compare_test
}  // namespace dtrain::cli
