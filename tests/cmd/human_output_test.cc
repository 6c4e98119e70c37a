// What dtrain prints for people: the progress bar's epoch (1-based, never past the plan), its
// step of the total and its tail, metric values in plain notation with their units, and a Slurm
// job's grants on status's slurm line.
#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cmd/human.h"
#include "cmd/job_view.h"
#include "cmd/progress.h"

namespace dtrain::cli {

BOOST_AUTO_TEST_SUITE(human_output)

BOOST_AUTO_TEST_CASE(the_epoch_shown_never_passes_the_planned_count) {
  BOOST_TEST(EpochShown(0, 1) == 1);
  BOOST_TEST(EpochShown(1, 1) == 1);  // after the last step of a one-epoch run: not "2/1"
  BOOST_TEST(EpochShown(2, 3) == 3);
  BOOST_TEST(EpochShown(3, 3) == 3);
  BOOST_TEST(EpochShown(7, 0) == 8);  // no epoch limit (train.steps): the epoch it is in
}

BOOST_AUTO_TEST_CASE(the_bar_shows_the_step_of_the_total_and_the_eta_when_known) {
  BOOST_TEST(StepBar(120, 480, "step") == "[######..................] step 120/480");
  BOOST_TEST(StepBar(600, 480, "step") == "[########################] step 600/480");
  BOOST_TEST(StepBar(120, 0, "step") == "step 120");  // no total known (yet)
  BOOST_TEST(BarTail(0.25, 0.875, 1234.4, 144.0) == " loss 0.2500 acc 87.5% 1234 samples/s ETA 2m24s");
  BOOST_TEST(BarTail(0.25, -1.0, 10.0, std::nullopt) == " loss 0.2500 10 samples/s");
  BOOST_TEST(BarTail(0.25, -1.0, 10.0, -1.0) == " loss 0.2500 10 samples/s ETA --");
}

BOOST_AUTO_TEST_CASE(metrics_read_in_plain_notation_with_units) {
  BOOST_TEST(FormatMetric("peak_rss_bytes", 94449700.0) == "90.1 MiB");
  BOOST_TEST(FormatMetric("bytes_sent", 512.0) == "512 B");
  BOOST_TEST(FormatMetric("comm_seconds", 0.0426703) == "0.0426703 s");
  BOOST_TEST(FormatMetric("bytebytes", 84652600.0) == "84652600");  // "bytes" not a word of it
  BOOST_TEST(FormatMetric("samples_per_sec", 13292.34) == "13292.3");
  BOOST_TEST(FormatMetric("keys_pulled", 84652600.0) == "84652600");  // was 8.46526e+07
  BOOST_TEST(FormatMetric("eval_accuracy", 0.8777) == "0.8777");
  BOOST_TEST(FormatMetric("lr", 1e-5) == "1e-05");
  BOOST_TEST(FormatMetric("train_loss", 0.0) == "0");
}

// The slurm line of `dtrain status` for the JOB object `job`, or "" when it has none.
std::string SlurmLine(const nlohmann::json& job) {
  std::ostringstream out;
  PrintJobDetail(ParseJob(job), out, false);
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("  slurm ")) return line;
  }
  return "";
}

BOOST_AUTO_TEST_CASE(status_shows_every_slurm_grant_of_the_attempt) {
  nlohmann::json job = {{"id", 3}, {"name", "elastic"}, {"state", "running"}, {"step", 40}};
  BOOST_TEST(SlurmLine(job).empty());
  // A daemon that tells only the newest allocation.
  job["slurm"] = {{"job_id", 813}, {"nodes", "node4"}};
  BOOST_TEST(SlurmLine(job) == "  slurm     job 813 on node4");
  job["slurm_grants"] = {{{"job_id", 812}, {"nodes", "node[3-4]"}, {"worker", nullptr}},
                         {{"job_id", 813}, {"nodes", "node4"}, {"worker", 1}}};
  BOOST_TEST(SlurmLine(job) == "  slurm     job 812 on node[3-4]; job 813 on node4 (worker 1)");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace dtrain::cli
