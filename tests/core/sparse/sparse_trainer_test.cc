// The sparse training loop and what it stands on: a KeyTable's state restored continues exactly
// as the original, evaluation reads untouched keys as zeros without making them, and the loop
// learns click rows towards the planted model's AUC, stopping when asked or at the target.
#include "core/sparse/sparse_trainer.h"

#include <boost/test/unit_test.hpp>
#include <cstring>
#include <utility>
#include <vector>

#include "core/data/click_synthetic.h"
#include "core/train/auc.h"

namespace dtrain::sparse {
namespace sparse_trainer_test {

using optim::OptimizerOptions;
using optim::OptimizerType;

// Keeps every point and improving evaluation; stops after `stop_after` steps (0: never).
class Recorder final : public SparseListener {
 public:
  explicit Recorder(std::int64_t stop_after = 0) : stop_after_(stop_after) {}
  void Record(std::span<const train::MetricPoint> points) override {
    points_.insert(points_.end(), points.begin(), points.end());
  }
  bool AfterStep(const SparseTrainer& t) override {
    return stop_after_ == 0 || t.position().step < stop_after_;
  }
  void Improved(const SparseTrainer& t, double value) override {
    improved_.emplace_back(t.position().step, value);
  }
  // The (step, value) of each improving evaluation the loop told of.
  const std::vector<std::pair<std::int64_t, double>>& improved() const { return improved_; }
  std::vector<double> Values(const std::string& name) const {
    std::vector<double> out;
    for (const auto& p : points_) {
      if (p.name == name) out.push_back(p.value);
    }
    return out;
  }
  // The (step, value) of each point named `name`.
  std::vector<std::pair<std::int64_t, double>> Points(const std::string& name) const {
    std::vector<std::pair<std::int64_t, double>> out;
    for (const auto& p : points_) {
      if (p.name == name) out.emplace_back(p.step, p.value);
    }
    return out;
  }

 private:
  std::int64_t stop_after_;
  std::vector<train::MetricPoint> points_;
  std::vector<std::pair<std::int64_t, double>> improved_;
};

train::TrainOptions Options(std::int64_t epochs) {
  train::TrainOptions o;
  o.epochs = epochs;
  o.batch_size = 32;
  o.seed = 5;
  o.log_every = 10;
  o.schedule.lr = 0.05f;
  return o;
}

bool SameBits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

BOOST_AUTO_TEST_SUITE(sparse_trainer)

BOOST_AUTO_TEST_CASE(a_restored_table_continues_exactly_as_the_original) {
  const data::ClickData clicks =
      data::MakeClicks({.rows = 800, .features = 5000, .nonzeros = 8, .seed = 2});
  const SparseModel fm({.type = SparseModelType::kFm, .factors = 3});
  for (const OptimizerOptions& o :
       {OptimizerOptions{.type = OptimizerType::kAdagrad, .initial_accumulator = 0.1f},
        OptimizerOptions{.type = OptimizerType::kFtrl, .alpha = 0.2f, .l1 = 0.05f}}) {
    BOOST_TEST_CONTEXT(optim::OptimizerTypeName(o.type)) {
      KeyTable original(fm, o, 3);
      LocalSparseParameters params(original);
      SparseTrainer first(fm, Options(1), clicks.rows, nullptr, params);
      Recorder none;
      BOOST_REQUIRE(first.Run(none).ok());

      KeyTable copy(fm, o, 3);
      BOOST_REQUIRE(copy.Restore(original.Snapshot()).ok());
      BOOST_TEST(copy.size() == original.size());
      LocalSparseParameters copy_params(copy);
      for (LocalSparseParameters* p : {&params, &copy_params}) {
        SparseTrainer second(fm, Options(2), clicks.rows, nullptr, *p);
        second.set_position(first.position());
        BOOST_REQUIRE(second.Run(none).ok());
      }
      const KeyTableState a = original.Snapshot(), b = copy.Snapshot();
      BOOST_TEST(a.keys == b.keys);
      BOOST_TEST(SameBits(a.slots, b.slots));
      BOOST_TEST(SameBits(a.globals, b.globals));
      BOOST_REQUIRE(a.state.size() == (o.type == OptimizerType::kFtrl ? 2u : 1u));
      for (std::size_t v = 0; v < a.state.size(); ++v) BOOST_TEST(SameBits(a.state[v], b.state[v]));
    }
  }
}

BOOST_AUTO_TEST_CASE(restore_refuses_state_of_another_shape) {
  const SparseModel logistic({.type = SparseModelType::kLogistic});
  KeyTable table(logistic, {.type = OptimizerType::kAdagrad}, 1);
  BOOST_TEST(!table.Restore({{1, 2}, {0.5f}, {{0.f, 0.f, 0.f}}, {0.f}}).ok());  // 2 keys, 1 slot
  BOOST_TEST(!table.Restore({{1, 1}, {0.5f, 0.5f}, {{0.f, 0.f, 0.f}}, {0.f}}).ok());  // repeated
  BOOST_TEST(!table.Restore({{1}, {0.5f}, {}, {0.f}}).ok());  // adagrad without its accumulator
  BOOST_TEST(table.Restore({{9}, {0.5f}, {{1.f, 2.f}}, {0.25f}}).ok());
  BOOST_REQUIRE(table.Find(9) != nullptr);
  BOOST_TEST(*table.Find(9) == 0.5f);
  BOOST_TEST(table.globals()[0] == 0.25f);
}

BOOST_AUTO_TEST_CASE(lookup_reads_untouched_keys_as_zero_and_makes_none) {
  const SparseModel fm({.type = SparseModelType::kFm, .factors = 2});
  KeyTable table(fm, {.type = OptimizerType::kSgd}, 1);
  LocalSparseParameters params(table);
  const std::vector<std::uint32_t> touched{4}, asked{4, 7};
  std::vector<float> slot(3), slots(6, -1.0f), globals(1);
  BOOST_REQUIRE(params.Pull(touched, slot.data(), globals.data()).ok());
  BOOST_REQUIRE(params.Lookup(asked, slots.data(), globals.data()).ok());
  BOOST_TEST(table.size() == 1u);
  BOOST_TEST(SameBits({slots.data(), 3}, slot));  // the touched key's own slot (random factors)
  BOOST_TEST((slots[3] == 0.0f && slots[4] == 0.0f && slots[5] == 0.0f));
}

BOOST_AUTO_TEST_CASE(training_approaches_the_planted_auc_and_reports_its_keys) {
  const data::ClickData clicks =
      data::MakeClicks({.rows = 12000, .features = 2000, .nonzeros = 10, .seed = 3});
  std::vector<std::uint32_t> train_rows(10000), test_rows(2000);
  for (std::uint32_t r = 0; r < 10000; ++r) train_rows[r] = r;
  for (std::uint32_t r = 0; r < 2000; ++r) test_rows[r] = 10000 + r;
  const data::SparseRows train = data::SelectRows(clicks.rows, train_rows);
  const data::SparseRows test = data::SelectRows(clicks.rows, test_rows);
  const std::vector<float> planted(clicks.probability.begin() + 10000, clicks.probability.end());
  const double planted_auc = train::Auc(planted, test.labels);

  const SparseModel logistic({.type = SparseModelType::kLogistic});
  KeyTable table(logistic, {.type = OptimizerType::kAdagrad, .initial_accumulator = 0.1f}, 1);
  LocalSparseParameters params(table);
  train::TrainOptions options = Options(3);
  options.schedule.lr = 0.2f;
  SparseTrainer trainer(logistic, options, train, &test, params);
  Recorder metrics;
  BOOST_REQUIRE(trainer.Run(metrics).value() == train::StopReason::kCompleted);
  const std::vector<double> auc = metrics.Values("eval_auc");
  BOOST_REQUIRE(auc.size() == 3u);  // every epoch's end
  BOOST_TEST_MESSAGE("eval AUC " << auc.back() << ", planted " << planted_auc);
  BOOST_TEST(auc.back() > planted_auc - 0.05);
  BOOST_TEST(auc.back() <= planted_auc + 0.01);
  const std::vector<double> keys = metrics.Values("model_keys");
  BOOST_TEST(keys.back() == static_cast<double>(table.size()));
  const std::vector<double> per_step = metrics.Values("keys_per_step");
  const std::vector<double> bytes = metrics.Values("bytes_per_step");
  BOOST_TEST(per_step.back() > 10.0);
  BOOST_TEST(per_step.back() <= 320.0);  // 32 rows of at most 10 features
  BOOST_TEST(bytes.back() == per_step.back() * 2 * 8, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(the_loop_stops_when_asked_and_at_the_target_accuracy) {
  const data::ClickData clicks =
      data::MakeClicks({.rows = 2000, .features = 500, .nonzeros = 6, .seed = 8});
  const SparseModel logistic({.type = SparseModelType::kLogistic});
  KeyTable table(logistic, {.type = OptimizerType::kSgd}, 1);
  LocalSparseParameters params(table);
  SparseTrainer asked(logistic, Options(5), clicks.rows, nullptr, params);
  Recorder stop_at_7(7);
  BOOST_TEST((asked.Run(stop_at_7).value() == train::StopReason::kRequested));
  BOOST_TEST(asked.position().step == 7);

  train::TrainOptions o = Options(50);
  o.eval_every = 5;
  o.target_accuracy = 0.5;  // the majority class alone reaches it
  SparseTrainer target(logistic, o, clicks.rows, &clicks.rows, params);
  Recorder never;
  BOOST_TEST((target.Run(never).value() == train::StopReason::kTargetReached));
  BOOST_TEST(target.position().step == 5);
}

// The same judgement as the dense loop's (train::JudgeEvaluation): with a min_delta no change of
// eval_loss exceeds, the first evaluation is the best and the loop stops `patience` evaluations
// later; with min_delta 0 and keep_best, the listener hears of exactly the evaluations that beat
// every earlier one, with their values.
BOOST_AUTO_TEST_CASE(the_loop_stops_early_and_tells_of_each_improving_evaluation) {
  const data::ClickData clicks =
      data::MakeClicks({.rows = 2000, .features = 500, .nonzeros = 6, .seed = 8});
  const SparseModel logistic({.type = SparseModelType::kLogistic});
  train::TrainOptions o = Options(50);
  o.eval_every = 5;
  o.keep_best = true;
  o.early_stopping = {
      .metric = train::EarlyStoppingMetric::kEvalLoss, .patience = 2, .min_delta = 1e9};
  {
    KeyTable table(logistic, {.type = OptimizerType::kSgd}, 1);
    LocalSparseParameters params(table);
    SparseTrainer plateau(logistic, o, clicks.rows, &clicks.rows, params);
    Recorder never;
    BOOST_TEST((plateau.Run(never).value() == train::StopReason::kEarlyStopped));
    BOOST_TEST(plateau.position().step == 15);
    const auto losses = never.Points("eval_loss");
    BOOST_REQUIRE(losses.size() == 3u);
    BOOST_REQUIRE(never.improved().size() == 1u);
    BOOST_TEST(never.improved().front().first == 5);
    BOOST_TEST(never.improved().front().second == losses.front().second);
    BOOST_TEST(plateau.early_stopping().state().best_step == 5);
    BOOST_TEST(plateau.early_stopping().state().since_best == 2);
  }
  o.epochs = 3;
  o.early_stopping = {.metric = train::EarlyStoppingMetric::kEvalLoss, .patience = 0};
  KeyTable table(logistic, {.type = OptimizerType::kSgd}, 1);
  LocalSparseParameters params(table);
  SparseTrainer learning(logistic, o, clicks.rows, &clicks.rows, params);
  Recorder never;
  BOOST_TEST((learning.Run(never).value() == train::StopReason::kCompleted));
  std::vector<std::pair<std::int64_t, double>> beating;
  for (const auto& [step, loss] : never.Points("eval_loss")) {
    if (beating.empty() || loss < beating.back().second) beating.emplace_back(step, loss);
  }
  BOOST_TEST(beating.size() >= 2u);
  BOOST_TEST((never.improved() == beating));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace sparse_trainer_test
}  // namespace dtrain::sparse
