// RunRecording with replicas that checkpoint together: with backup workers every replica proposes
// a checkpoint on the step before each every_steps one, so that step takes every replica's
// gradient; without them the step count proposes nothing (every_steps checkpoints need no
// agreement). Either way the checkpoints come at every_steps. Where only some steps may be
// checkpointed (RunOptions::checkpoint_at: an elastic local job's averages), a checkpoint due at
// another step waits for the next that may be.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <vector>

#include "daemon/runner/recorded_training.h"

namespace dtrain::runner {
namespace run_recording_test {

class NoRecords final : public RunRecorder {
 public:
  void RecordMetrics(std::span<const train::MetricPoint>) override {}
  Status SaveCheckpoint(const store::CheckpointView&) override { return Status::Ok(); }
  Status SaveBestModel(const store::BestModelInfo&, const store::CheckpointView&) override {
    return Status::Ok();
  }
  Status SaveClassReport(std::int64_t, const train::ClassReport&) override { return Status::Ok(); }
};

// A collective strategy that notes the step at which each proposal came.
class NotedProposals final : public train::Strategy {
 public:
  explicit NotedProposals(const std::int64_t& step) : step_(step) {}
  Status Apply(std::int64_t, std::span<float>, std::span<float>, float,
               const train::StepShare&) override {
    return Status::Ok();
  }
  optim::Optimizer* LocalOptimizer() override { return nullptr; }
  bool CollectiveCheckpoints() const override { return true; }
  void ProposeCheckpoint() override { proposed.push_back(step_); }

  std::vector<std::int64_t> proposed;

 private:
  const std::int64_t& step_;
};

struct Recorded {
  std::vector<std::int64_t> proposed, saved;
};

// Steps 1 .. 12 of a run that checkpoints every 5 steps, told to RunRecording as each completes.
Recorded TwelveSteps(bool backups) {
  std::int64_t step = 0;
  NotedProposals strategy(step);
  NoRecords recorder;
  const config::CheckpointConfig policy{.every_steps = 5, .keep_best = {}};
  const RunOptions options;
  Recorded recorded;
  RunRecording recording(
      policy, recorder, options, -1, [&step] { return RunProgress{.step = step}; },
      [&] {
        recorded.saved.push_back(step);
        return Status::Ok();
      },
      &strategy, backups);
  for (step = 1; step <= 12; ++step) BOOST_TEST(recording.AfterStep());
  recorded.proposed = strategy.proposed;
  return recorded;
}

BOOST_AUTO_TEST_SUITE(run_recording)

BOOST_AUTO_TEST_CASE(with_backups_every_replica_proposes_on_the_step_before_a_checkpoint) {
  const Recorded r = TwelveSteps(true);
  BOOST_TEST(r.proposed == std::vector<std::int64_t>({4, 9}), boost::test_tools::per_element());
  BOOST_TEST(r.saved == std::vector<std::int64_t>({5, 10}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(without_backups_the_step_count_proposes_nothing) {
  const Recorded r = TwelveSteps(false);
  BOOST_TEST(r.proposed.empty());
  BOOST_TEST(r.saved == std::vector<std::int64_t>({5, 10}), boost::test_tools::per_element());
}

// Every 5 steps, but only after every 4th step (averages at 4, 8, 12, ...): the checkpoints due at
// 5 and 10 are written at 8 and 12, the one due at 15 at 16, and the one due at 20 on time.
BOOST_AUTO_TEST_CASE(a_checkpoint_due_between_averages_waits_for_the_next_average) {
  std::int64_t step = 0;
  NoRecords recorder;
  const config::CheckpointConfig policy{.every_steps = 5, .keep_best = {}};
  RunOptions options;
  options.checkpoint_at = [](std::int64_t s) { return s % 4 == 0; };
  std::vector<std::int64_t> saved;
  RunRecording recording(
      policy, recorder, options, -1, [&step] { return RunProgress{.step = step}; },
      [&] {
        saved.push_back(step);
        return Status::Ok();
      });
  for (step = 1; step <= 21; ++step) BOOST_TEST(recording.AfterStep());
  BOOST_TEST(saved == std::vector<std::int64_t>({8, 12, 16, 20}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace run_recording_test
}  // namespace dtrain::runner
