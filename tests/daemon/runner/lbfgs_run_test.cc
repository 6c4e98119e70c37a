// L-BFGS jobs through the job runner (`dtrain run`'s): recorded iterations, checkpoints that hold
// the history, a run stopped and resumed that ends exactly where an uninterrupted one does, and
// early stopping with the best model kept, also across a resume.
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <map>
#include <string>

#include "common/temp_dir.h"
#include "config/job_file.h"
#include "core/optim/test_util.h"
#include "daemon/runner/lbfgs_checkpoint.h"
#include "daemon/runner/local_run.h"

namespace dtrain::runner {
namespace lbfgs_run_test {

using dtrain::testing::TempDir;

const char* const kJob = R"(
name = "blobs-lbfgs"
[data]
format = "synthetic"
rows = 1500
test_rows = 500
classes = 3
noise = 2.0
features = 8
[model]
type = "softmax"
[train]
batch_size = 256
weight_decay = 0.001
eval_every = 5
[optimizer]
type = "lbfgs"
history = 4
max_iterations = 40
gradient_tolerance = 1e-7
loss_tolerance = 0
[checkpoint]
every_steps = 10
)";

config::JobConfig Job(const std::vector<std::string>& overrides = {},
                      const std::string& train_keys = "") {
  std::string text = kJob;
  text.insert(text.find("eval_every = 5\n"), train_keys);
  config::LoadResult loaded = config::ParseJobText(text, "job.toml", overrides, ".");
  for (const config::Diagnostic& d : loaded.diagnostics) {
    BOOST_TEST_MESSAGE(config::FormatDiagnostic(d));
  }
  BOOST_REQUIRE(loaded.ok());
  return *loaded.job;
}

// Sets the stop flag once the run reaches `at` iterations.
class StopAt final : public RunObserver {
 public:
  StopAt(std::int64_t at, std::atomic<bool>& stop) : at_(at), stop_(stop) {}
  void OnStart(const RunProgress&, const RunSubject&, bool) override {}
  void OnMetrics(const RunProgress& progress, std::span<const train::MetricPoint>) override {
    if (progress.step >= at_) stop_.store(true);
  }
  void OnCheckpoint(const RunProgress&) override {}

 private:
  std::int64_t at_;
  std::atomic<bool>& stop_;
};

struct Fixture {
  Fixture() {
    auto opened = store::Store::Open(dir.Path("runs.db"));
    BOOST_REQUIRE(opened.ok());
    store = std::move(opened).value();
  }
  std::int64_t Create(const config::JobConfig& job) {
    store::JobRecord record;
    record.name = job.name;
    record.spec_toml = config::FormatResolvedJob(job);
    auto id = store->CreateJob(record);
    BOOST_REQUIRE(id.ok());
    return id.value();
  }
  store::CheckpointData Latest(std::int64_t id) {
    auto latest = store->LatestCheckpoint(id);
    BOOST_REQUIRE(latest.ok());
    BOOST_REQUIRE(latest.value().checkpoint.has_value());
    return *latest.value().checkpoint;
  }
  TempDir dir;
  std::unique_ptr<store::Store> store;
};

BOOST_FIXTURE_TEST_SUITE(lbfgs_run, Fixture)

BOOST_AUTO_TEST_CASE(records_every_iteration_and_ends_with_a_checkpoint_of_its_history) {
  const config::JobConfig job = Job();
  const std::int64_t id = Create(job);
  Result<RunOutcome> out = RunJobInProcess(job, id, *store, {});
  BOOST_REQUIRE(out.ok());
  BOOST_TEST((out.value().state == store::JobState::kSucceeded), out.value().reason);
  BOOST_TEST(out.value().reason.find("40 iterations") != std::string::npos, out.value().reason);
  BOOST_REQUIRE(out.value().final_eval.has_value());
  BOOST_TEST(out.value().final_eval->accuracy > 0.8);

  auto metrics = store->Metrics(id, "");
  BOOST_REQUIRE(metrics.ok());
  std::map<std::string, int> counts;
  std::map<std::string, double> last;
  for (const auto& m : metrics.value()) counts[m.name]++, last[m.name] = m.value;
  for (const char* name : {"train_loss", "train_accuracy", "objective", "grad_norm", "step_length",
                           "evaluations", "samples_per_sec"}) {
    BOOST_TEST(counts[name] == 40, name);
  }
  BOOST_TEST(counts["eval_accuracy"] == 8);            // every 5 iterations
  BOOST_TEST(last["objective"] > last["train_loss"]);  // the L2 term

  const store::CheckpointData c = Latest(id);
  BOOST_TEST(c.step == 40);
  BOOST_TEST(c.optimizer_state.size() == 1u + 2 * 4 + 1);  // g, 4 pairs, the scalars
  Result<optim::LbfgsState> state = DecodeLbfgsState(c.optimizer_state.back());
  BOOST_REQUIRE(state.ok());
  BOOST_TEST(state.value().iteration == 40);
  BOOST_TEST(state.value().pairs == 4);
  BOOST_TEST(state.value().loss == last["objective"]);
  BOOST_TEST(static_cast<std::int64_t>(c.epoch) == state.value().evaluations);
}

BOOST_AUTO_TEST_CASE(a_stopped_run_resumes_and_ends_bit_for_bit_where_an_unbroken_one_does) {
  const config::JobConfig job = Job();
  const std::int64_t whole = Create(job);
  BOOST_REQUIRE(RunJobInProcess(job, whole, *store, {}).ok());

  const std::int64_t broken = Create(job);
  std::atomic<bool> stop{false};
  StopAt observer(13, stop);
  RunOptions options;
  options.stop = &stop;
  options.observer = &observer;
  Result<RunOutcome> first = RunJobInProcess(job, broken, *store, options);
  BOOST_REQUIRE(first.ok());
  BOOST_TEST((first.value().state == store::JobState::kCancelled), first.value().reason);
  BOOST_TEST(Latest(broken).step == 13);  // the stop's checkpoint, between the periodic ones

  BOOST_REQUIRE(store->SetJobState(broken, store::JobState::kQueued, "resume").ok());
  Result<RunOutcome> second = RunJobInProcess(job, broken, *store, {});
  BOOST_REQUIRE(second.ok());
  BOOST_TEST((second.value().state == store::JobState::kSucceeded), second.value().reason);
  BOOST_TEST(second.value().resumed_from == 13);
  const store::CheckpointData a = Latest(whole), b = Latest(broken);
  BOOST_TEST(a.step == b.step);
  BOOST_TEST(optim::BitEqual(a.params, b.params));
  BOOST_TEST(optim::BitEqual(a.optimizer_state.back(), b.optimizer_state.back()));
}

// train.early_stopping with a min_delta no change of eval_loss exceeds: the first evaluation
// (iteration 5) is the best, kept as the job's best model, and the run stops at the evaluation
// two after it (iteration 15). Stopped at iteration 13 and resumed, it stops there too: the rule's
// state travels with the checkpoint (lost, the resumed run would stop at iteration 25).
BOOST_AUTO_TEST_CASE(stops_early_keeping_its_best_model_also_when_resumed) {
  const config::JobConfig job =
      Job({}, "early_stopping = { metric = \"eval_loss\", patience = 2, min_delta = 1e9 }\n");
  const auto check = [&](std::int64_t id, const RunOutcome& out) {
    BOOST_TEST((out.state == store::JobState::kSucceeded), out.reason);
    BOOST_TEST(out.reason.rfind("stopped early at step 15: best eval_loss ", 0) == 0, out.reason);
    BOOST_TEST(out.reason.find(" at step 5, no improvement by more than min_delta in 2 "
                               "evaluations since") != std::string::npos,
               out.reason);
    auto best = store->BestModel(id);
    BOOST_REQUIRE(best.ok());
    BOOST_REQUIRE(best.value().has_value());
    BOOST_TEST(best.value()->step == 5);
    BOOST_TEST(best.value()->metric == "eval_loss");
    auto losses = store->Metrics(id, "eval_loss");
    BOOST_REQUIRE(losses.ok());
    BOOST_REQUIRE(!losses.value().empty());
    BOOST_TEST(losses.value().front().step == 5);
    BOOST_TEST(best.value()->value == losses.value().front().value);
    auto model = store->LoadBestModel(id);
    BOOST_REQUIRE(model.ok());
    BOOST_REQUIRE(model.value().has_value());
    BOOST_TEST(model.value()->step == 5);
    BOOST_TEST(model.value()->params.size() == Latest(id).params.size());
  };
  const std::int64_t whole = Create(job);
  Result<RunOutcome> straight = RunJobInProcess(job, whole, *store, {});
  BOOST_REQUIRE(straight.ok());
  check(whole, straight.value());

  const std::int64_t broken = Create(job);
  std::atomic<bool> stop{false};
  StopAt observer(13, stop);
  RunOptions options;
  options.stop = &stop;
  options.observer = &observer;
  Result<RunOutcome> first = RunJobInProcess(job, broken, *store, options);
  BOOST_REQUIRE(first.ok());
  BOOST_TEST((first.value().state == store::JobState::kCancelled), first.value().reason);
  BOOST_REQUIRE(Latest(broken).step == 13);
  BOOST_REQUIRE(store->SetJobState(broken, store::JobState::kQueued, "resume").ok());
  Result<RunOutcome> second = RunJobInProcess(job, broken, *store, {});
  BOOST_REQUIRE(second.ok());
  check(broken, second.value());
}

BOOST_AUTO_TEST_CASE(refuses_a_checkpoint_of_another_history) {
  const config::JobConfig job = Job();
  const std::int64_t id = Create(job);
  BOOST_REQUIRE(RunJobInProcess(job, id, *store, {}).ok());
  const store::CheckpointData c = Latest(id);
  optim::VectorSlices vectors(optim::LbfgsVectorCount(5), c.params.size());
  optim::LbfgsState state;
  const Status refused =
      RestoreLbfgsCheckpoint(c, 5, job.train.seed, c.model_spec, vectors, &state);
  BOOST_TEST(refused.message().find("history of 5 pairs") != std::string::npos, refused.message());
  BOOST_TEST(!RestoreLbfgsCheckpoint(c, 4, job.train.seed + 1, c.model_spec, vectors, &state).ok());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace lbfgs_run_test
}  // namespace dtrain::runner
