// The training loop: determinism, resumption, convergence, stopping rules.
#include "core/train/trainer.h"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <vector>

#include "core/data/dataset.h"
#include "core/data/readers.h"
#include "core/math/gemm.h"
#include "core/model/network.h"
#include "core/optim/optimizer.h"

namespace dtrain::train {
namespace trainer_test {

// Records every metric; optionally stops after a number of steps.
class RecordingListener : public TrainListener {
 public:
  explicit RecordingListener(std::int64_t stop_after = -1) : stop_after_(stop_after) {}
  void Record(std::span<const MetricPoint> points) override {
    for (const MetricPoint& p : points) last_[p.name] = p, counts_[p.name]++;
  }
  bool AfterStep(const Trainer& t) override {
    ++steps_seen_;
    return stop_after_ < 0 || t.position().step < stop_after_;
  }
  std::map<std::string, MetricPoint> last_;
  std::map<std::string, int> counts_;
  std::int64_t steps_seen_ = 0;

 private:
  std::int64_t stop_after_;
};

model::ModelSpec MlpSpec(int inputs, int classes) {
  model::ModelSpec s;
  s.type = model::ModelType::kMlp;
  s.inputs = inputs;
  s.hidden = {16, 8};
  s.activation = math::Activation::kTanh;
  s.outputs = classes;
  s.loss = model::LossType::kSoftmaxCrossEntropy;
  return s;
}

// A layer list with dropout, whose masks must repeat for the same seed, replica and step.
model::ModelSpec DropoutSpec(int inputs, int classes) {
  model::ModelSpec s;
  s.type = model::ModelType::kSequential;
  s.inputs = inputs;
  s.input_shape = {inputs, 1, 1};
  s.outputs = classes;
  s.layers = {
      {.kind = model::LayerKind::kDense, .units = 16, .activation = math::Activation::kRelu},
      {.kind = model::LayerKind::kDropout, .rate = 0.3f},
      {.kind = model::LayerKind::kDense, .units = classes}};
  return s;
}

// A layer list with batch normalisation, whose running statistics live in the parameters.
model::ModelSpec BatchNormSpec(int inputs, int classes) {
  model::ModelSpec s = DropoutSpec(inputs, classes);
  s.layers[0].activation = math::Activation::kIdentity;
  s.layers[1] = {.kind = model::LayerKind::kBatchNorm};
  s.layers.insert(s.layers.begin() + 2,
                  {.kind = model::LayerKind::kActivation, .activation = math::Activation::kRelu});
  return s;
}

using SpecMaker = model::ModelSpec (*)(int inputs, int classes);

struct Fixture {
  Fixture() {
    math::SetBlasThreads(1);
    data::BlobsOptions o;
    o.rows = 900;
    o.features = 5;
    o.classes = 3;
    o.seed = 11;
    std::tie(train, test) = data::SplitValidation(data::MakeBlobs(o), 1.0 / 3.0, 3);
  }
  data::Dataset train, test;
};

struct Run {
  Run(const data::Dataset& train, const data::Dataset& test, TrainOptions options,
      optim::OptimizerType type = optim::OptimizerType::kAdam, SpecMaker spec = MlpSpec)
      : model(spec(static_cast<int>(train.features), train.num_classes)),
        strategy(optim::MakeOptimizer(Opt(type), 0, model.NumParams()), 1.0f),
        trainer(model, options, train, &test, data::ConstantScaling(1.0f), strategy) {
    trainer.InitParams();
  }
  static optim::OptimizerOptions Opt(optim::OptimizerType type) {
    optim::OptimizerOptions o;
    o.type = type;
    return o;
  }
  model::Model model;
  LocalStrategy strategy;
  Trainer trainer;
};

TrainOptions Options() {
  TrainOptions o;
  o.epochs = 3;
  o.batch_size = 32;
  o.seed = 5;
  o.log_every = 10;
  o.schedule.lr = 0.01f;
  o.schedule.type = optim::ScheduleType::kCosine;
  o.schedule.warmup_steps = 5;
  o.weight_decay = 1e-4f;
  return o;
}

BOOST_FIXTURE_TEST_SUITE(trainer, Fixture)

BOOST_AUTO_TEST_CASE(same_seed_same_threads_gives_bit_identical_parameters) {
  for (SpecMaker spec : {MlpSpec, DropoutSpec, BatchNormSpec}) {
    const auto adam = optim::OptimizerType::kAdam;
    Run a(train, test, Options(), adam, spec), b(train, test, Options(), adam, spec);
    RecordingListener la, lb;
    BOOST_REQUIRE(a.trainer.Run(la).ok());
    BOOST_REQUIRE(b.trainer.Run(lb).ok());
    BOOST_TEST(std::equal(a.trainer.params().begin(), a.trainer.params().end(),
                          b.trainer.params().begin()));
    TrainOptions other = Options();
    other.seed = 6;
    Run c(train, test, other, adam, spec);
    RecordingListener lc;
    BOOST_REQUIRE(c.trainer.Run(lc).ok());
    BOOST_TEST(!std::equal(a.trainer.params().begin(), a.trainer.params().end(),
                           c.trainer.params().begin()));
  }
}

// A batch split over threads (model::LocalNetwork): the same bits for the same seed and thread
// count, and the model one thread trains up to rounding.
BOOST_AUTO_TEST_CASE(a_batch_split_over_threads_trains_the_same_bits_every_run) {
  for (SpecMaker spec : {MlpSpec, DropoutSpec}) {
    const auto train_with = [&](int threads) {
      model::LocalNetwork net(spec(static_cast<int>(train.features), train.num_classes),
                              Trainer::Capacity(Options()), threads);
      BOOST_TEST(net.Slices() == threads);
      LocalStrategy strategy(
          optim::MakeOptimizer(Run::Opt(optim::OptimizerType::kAdam), 0, net.NumParams()), 1.0f);
      Trainer trainer(net, Options(), train, &test, data::ConstantScaling(1.0f), strategy);
      trainer.InitParams();
      RecordingListener listener;
      BOOST_REQUIRE(trainer.Run(listener).ok());
      return std::vector<float>(trainer.params().begin(), trainer.params().end());
    };
    const std::vector<float> a = train_with(2), b = train_with(2), one = train_with(1);
    BOOST_TEST((a == b));
    // Whether 2 threads round differently from 1 is the BLAS kernel's business (SkylakeX's give
    // the MLP's row split the same bits): only closeness to one thread must hold.
    if (spec == MlpSpec) {
      double largest = 0.0;
      for (std::size_t i = 0; i < a.size(); ++i) {
        largest = std::max(largest, static_cast<double>(std::fabs(a[i] - one[i])));
      }
      BOOST_TEST(largest < 1e-3, "largest difference from one thread " << largest);
    }
  }
}

// A LocalNetwork that hides its team, so that the trainer gathers a batch on one thread.
class TeamlessNetwork final : public model::Network {
 public:
  explicit TeamlessNetwork(model::LocalNetwork& net) : net_(net) {}
  const model::ModelSpec& spec() const override { return net_.spec(); }
  std::size_t NumParams() const override { return net_.NumParams(); }
  void Init(std::span<float> params, std::uint64_t seed) const override { net_.Init(params, seed); }
  Result<model::LossValue> ForwardBackward(const float* params, const float* x, const float* y,
                                           int rows, float wd, float* grad) override {
    return net_.ForwardBackward(params, x, y, rows, wd, grad);
  }
  Result<model::LossValue> ForwardBackwardStep(float* params, const float* x, const float* y,
                                               int rows, float wd, float* grad,
                                               optim::Optimizer& optimizer, float lr) override {
    return net_.ForwardBackwardStep(params, x, y, rows, wd, grad, optimizer, lr);
  }
  Result<model::LossValue> Evaluate(const float* params, const float* x, const float* y,
                                    int rows) override {
    return net_.Evaluate(params, x, y, rows);
  }
  Result<double> WeightDecayPenalty(const float* params, float wd) override {
    return net_.WeightDecayPenalty(params, wd);
  }
  void SetNoiseSeed(std::uint64_t seed) override { net_.SetNoiseSeed(seed); }
  int BatchSlices() const override { return net_.BatchSlices(); }

 private:
  model::LocalNetwork& net_;
};

// The trainer converts a batch's rows on the network's team, each thread the rows of its slice
// (uneven here: batches of 32 and 24 rows over 3 threads): the same rows as one thread converts.
BOOST_AUTO_TEST_CASE(a_batch_gathered_on_the_team_is_the_batch_one_thread_gathers) {
  for (SpecMaker spec : {MlpSpec, DropoutSpec}) {
    const auto train_with = [&](bool hide_team) {
      model::LocalNetwork net(spec(static_cast<int>(train.features), train.num_classes),
                              Trainer::Capacity(Options()), 3);
      BOOST_REQUIRE(net.Team() != nullptr && net.Team()->size() == 3);
      TeamlessNetwork teamless(net);
      model::Network& used = hide_team ? static_cast<model::Network&>(teamless) : net;
      LocalStrategy strategy(
          optim::MakeOptimizer(Run::Opt(optim::OptimizerType::kMomentum), 0, used.NumParams()),
          1.0f);
      Trainer trainer(used, Options(), train, &test, data::ConstantScaling(1.0f), strategy);
      trainer.InitParams();
      RecordingListener listener;
      BOOST_REQUIRE(trainer.Run(listener).ok());
      return std::vector<float>(trainer.params().begin(), trainer.params().end());
    };
    BOOST_TEST((train_with(false) == train_with(true)));
  }
}

BOOST_AUTO_TEST_CASE(resuming_from_saved_state_continues_bit_identically) {
  for (SpecMaker spec : {MlpSpec, DropoutSpec, BatchNormSpec}) {
    const auto adam = optim::OptimizerType::kAdam;
    Run straight(train, test, Options(), adam, spec);
    RecordingListener all;
    BOOST_REQUIRE(straight.trainer.Run(all).ok());

    // Stop mid-epoch, carry params + optimizer state + position into a fresh trainer.
    Run first(train, test, Options(), adam, spec);
    RecordingListener stop(23);
    auto why = first.trainer.Run(stop);
    BOOST_REQUIRE(why.ok());
    BOOST_TEST((why.value() == StopReason::kRequested));
    BOOST_TEST(first.trainer.position().step == 23);

    Run second(train, test, Options(), adam, spec);
    std::copy(first.trainer.params().begin(), first.trainer.params().end(),
              second.trainer.params().begin());
    optim::Optimizer* from = first.strategy.LocalOptimizer();
    optim::Optimizer* to = second.strategy.LocalOptimizer();
    auto src = from->StateVectors();
    auto dst = to->StateVectors();
    BOOST_REQUIRE(src.size() == dst.size());
    for (std::size_t i = 0; i < src.size(); ++i)
      std::copy(src[i].begin(), src[i].end(), dst[i].begin());
    to->set_steps(from->steps());
    second.trainer.set_position(first.trainer.position());
    RecordingListener rest;
    BOOST_REQUIRE(second.trainer.Run(rest).ok());
    BOOST_TEST(second.trainer.position().step == straight.trainer.position().step);
    BOOST_TEST(std::equal(straight.trainer.params().begin(), straight.trainer.params().end(),
                          second.trainer.params().begin()));
  }
}

BOOST_AUTO_TEST_CASE(learns_separable_blobs_and_reports_metrics) {
  Run run(train, test, Options());
  RecordingListener l;
  auto why = run.trainer.Run(l);
  BOOST_REQUIRE(why.ok());
  BOOST_TEST((why.value() == StopReason::kCompleted));
  const auto per_epoch = static_cast<std::int64_t>(run.trainer.StepsPerEpoch());
  BOOST_TEST(per_epoch == 19);  // ceil(600 / 32)
  BOOST_TEST(run.trainer.position().step == 3 * per_epoch);
  BOOST_TEST(l.counts_["eval_accuracy"] == 3);  // once per epoch
  BOOST_TEST(l.last_["eval_accuracy"].value > 0.9);
  BOOST_TEST(l.last_["train_loss"].value < 0.5);
  BOOST_TEST(l.last_["lr"].value < 0.01);  // cosine decayed
  for (const char* name : {"train_loss", "train_accuracy", "lr", "grad_norm", "samples_per_sec",
                           "step_seconds_p50", "step_seconds_p95", "eval_loss", "eval_accuracy"}) {
    BOOST_TEST_CONTEXT(name) { BOOST_TEST(l.counts_.count(name) == 1u); }
  }
  BOOST_TEST(l.last_["step_seconds_p50"].value > 0.0);
  BOOST_TEST(l.last_["step_seconds_p50"].value <= l.last_["step_seconds_p95"].value);
  // One worker's sharded run says nothing of a global batch's rows.
  BOOST_TEST(l.counts_.count("epoch_rows") == 0u);
  const EvalResult eval = run.trainer.Evaluate(test).value();
  BOOST_TEST(eval.rows == test.rows);
  BOOST_TEST(eval.accuracy == l.last_["eval_accuracy"].value);
}

// Global batches (sync modes): each log point says how many of its epoch's rows the steps took;
// the last step ends the third epoch, all 600 of its rows.
BOOST_AUTO_TEST_CASE(global_batches_report_the_rows_of_the_epoch_taken) {
  TrainOptions options = Options();
  options.sharding = data::ShardMode::kGlobalBatches;
  Run run(train, test, options);
  RecordingListener l;
  BOOST_REQUIRE(run.trainer.Run(l).ok());
  BOOST_TEST(l.counts_["epoch_rows"] == 6);  // steps 10, 20, ..., 50 and the last, 57
  BOOST_TEST(l.last_["epoch_rows"].value == 600.0);
  BOOST_TEST(l.last_["epoch_rows"].epoch == 3.0);
}

// A global batch over fewer replicas than it was planned for (an elastic job that lost one): the
// buffers hold the largest share, ceil(G / world) rows, and never fewer than batch_size or an
// evaluation's rows; other shardings ignore the global batch.
BOOST_AUTO_TEST_CASE(capacity_holds_the_largest_share_of_a_global_batch) {
  TrainOptions o = Options();  // batch_size 32
  o.eval_batch_size = 10;
  o.sharding = data::ShardMode::kGlobalBatches;
  o.world_size = 2;
  o.global_batch = 3 * 32 + 1;
  BOOST_TEST(Trainer::Capacity(o) == 49);
  o.world_size = 3;
  o.global_batch = 3 * 32;
  BOOST_TEST(Trainer::Capacity(o) == 32);
  o.world_size = 4;
  BOOST_TEST(Trainer::Capacity(o) == 32);  // a share of 24, but batch_size rows at least
  o.eval_batch_size = 100;
  BOOST_TEST(Trainer::Capacity(o) == 100);
  o.eval_batch_size = 10;
  o.world_size = 2;
  o.sharding = data::ShardMode::kContiguousShards;
  BOOST_TEST(Trainer::Capacity(o) == 32);
}

BOOST_AUTO_TEST_CASE(batchnorm_running_statistics_follow_the_data_and_serve_evaluation) {
  Run run(train, test, Options(), optim::OptimizerType::kAdam, BatchNormSpec);
  RecordingListener l;
  BOOST_REQUIRE(run.trainer.Run(l).ok());
  BOOST_TEST(l.last_["eval_accuracy"].value > 0.9);  // evaluation normalises by running stats
  // The running variance of the 16 pre-activations: moved off its start (1) toward the data's.
  const std::size_t norm = run.model.ParamOffset(1);
  const std::span<const float> running_var = run.trainer.params().subspan(norm + 3 * 16, 16);
  BOOST_TEST(
      std::none_of(running_var.begin(), running_var.end(), [](float v) { return v == 1.0f; }));
}

BOOST_AUTO_TEST_CASE(stops_on_step_limit_and_on_target_accuracy) {
  TrainOptions limited = Options();
  limited.steps = 7;
  Run a(train, test, limited);
  RecordingListener la;
  BOOST_REQUIRE(a.trainer.Run(la).ok());
  BOOST_TEST(a.trainer.position().step == 7);
  BOOST_TEST(la.steps_seen_ == 7);
  BOOST_TEST(la.counts_["eval_accuracy"] == 1);  // the final evaluation

  TrainOptions target = Options();
  target.epochs = 50;
  target.eval_every = 5;
  target.target_accuracy = 0.8;
  Run b(train, test, target);
  RecordingListener lb;
  auto why = b.trainer.Run(lb);
  BOOST_REQUIRE(why.ok());
  BOOST_TEST((why.value() == StopReason::kTargetReached));
  BOOST_TEST(lb.last_["eval_accuracy"].value >= 0.8);
  BOOST_TEST(b.trainer.position().step < 50 * 19);
}

// min_delta far above any change the loss can make (it starts near ln 3): the first evaluation
// stays the best, and the run stops after `patience` more, whatever the rounding.
BOOST_AUTO_TEST_CASE(stops_early_after_patience_evaluations_without_improvement) {
  TrainOptions o = Options();
  o.epochs = 50;
  o.eval_every = 5;
  o.early_stopping = {EarlyStoppingMetric::kEvalLoss, 3, 100.0};
  Run run(train, test, o);
  RecordingListener l;
  auto why = run.trainer.Run(l);
  BOOST_REQUIRE(why.ok());
  BOOST_TEST((why.value() == StopReason::kEarlyStopped));
  BOOST_TEST(run.trainer.position().step == 20);  // evaluations at 5 (the best), 10, 15, 20
  BOOST_TEST(l.counts_["eval_loss"] == 4);
  const EarlyStoppingState& state = run.trainer.early_stopping().state();
  BOOST_TEST(state.best_step == 5);
  BOOST_TEST(state.since_best == 3);
  BOOST_TEST(run.trainer.early_stopping().Describe(20).rfind("stopped early at step 20: best "
                                                             "eval_loss ",
                                                             0) == 0);

  // A target reached wins over stopping early at the same evaluation.
  o.target_accuracy = 0.01;
  Run target(train, test, o);
  RecordingListener lt;
  BOOST_TEST((target.trainer.Run(lt).value() == StopReason::kTargetReached));
  BOOST_TEST(target.trainer.position().step == 5);
}

// Keeps each evaluation's eval_loss and the models handed over as improvements.
class BestListener : public RecordingListener {
 public:
  void Record(std::span<const MetricPoint> points) override {
    RecordingListener::Record(points);
    for (const MetricPoint& p : points) {
      if (p.name == "eval_loss") losses_.emplace_back(p.step, p.value);
    }
  }
  void Improved(const Trainer& t, double value) override {
    improved_.push_back({t.position().step, value, {t.params().begin(), t.params().end()}});
  }
  struct Kept {
    std::int64_t step;
    double value;
    std::vector<float> params;
  };
  std::vector<std::pair<std::int64_t, double>> losses_;
  std::vector<Kept> improved_;
};

// keep_best without early stopping (patience 0): every evaluation is judged, none stops the
// run, and each one that improved on the best so far hands over the model it evaluated.
BOOST_AUTO_TEST_CASE(keep_best_hands_over_each_improving_evaluations_model) {
  TrainOptions o = Options();
  o.epochs = 3;
  o.eval_every = 5;
  o.keep_best = true;
  o.early_stopping.metric = EarlyStoppingMetric::kEvalLoss;
  Run run(train, test, o);
  BestListener l;
  auto why = run.trainer.Run(l);
  BOOST_REQUIRE(why.ok());
  BOOST_TEST((why.value() == StopReason::kCompleted));
  BOOST_REQUIRE(l.losses_.size() > 2u);
  std::vector<std::int64_t> expected;  // the evaluations that beat every one before them
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [step, loss] : l.losses_) {
    if (loss < best) expected.push_back(step), best = loss;
  }
  BOOST_REQUIRE(l.improved_.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    BOOST_TEST(l.improved_[i].step == expected[i]);
  }
  const BestListener::Kept& last = l.improved_.back();
  BOOST_TEST(last.value == best);
  BOOST_TEST(run.trainer.early_stopping().state().best_step == last.step);
  // The parameters handed over are the ones that evaluation judged.
  std::copy(last.params.begin(), last.params.end(), run.trainer.params().begin());
  BOOST_TEST(run.trainer.Evaluate(test).value().loss == last.value);

  // Without keep_best nothing is handed over.
  o.keep_best = false;
  Run off(train, test, o);
  BestListener lo;
  BOOST_REQUIRE(off.trainer.Run(lo).ok());
  BOOST_TEST(lo.improved_.empty());
}

BOOST_AUTO_TEST_CASE(linear_regression_recovers_a_linear_teacher) {
  data::TeacherOptions o;
  o.rows = 2000;
  o.features = 6;
  o.noise = 0.01f;
  data::Dataset teach = data::MakeLinearTeacher(o);
  model::ModelSpec spec;
  spec.type = model::ModelType::kLinear;
  spec.inputs = 6;
  spec.outputs = 1;
  spec.loss = model::LossType::kMeanSquaredError;
  model::Model m(spec);
  optim::OptimizerOptions opt;
  opt.type = optim::OptimizerType::kMomentum;
  LocalStrategy strategy(optim::MakeOptimizer(opt, 0, m.NumParams()), 0.0f);
  TrainOptions options;
  options.epochs = 20;
  options.batch_size = 50;
  options.schedule.lr = 0.02f;
  Trainer t(m, options, teach, &teach, data::ConstantScaling(1.0f), strategy);
  t.InitParams();
  RecordingListener l;
  BOOST_REQUIRE(t.Run(l).ok());
  BOOST_TEST(l.counts_.count("eval_mse") == 1u);
  BOOST_TEST(l.counts_.count("eval_accuracy") == 0u);
  BOOST_TEST(l.last_["eval_mse"].value < 0.01);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace trainer_test
}  // namespace dtrain::train
