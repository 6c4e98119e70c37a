// Trainer: the training loop of one replica — batches, forward, backward, a Strategy step,
// periodic evaluation and a stream of metrics. The same loop runs every distribution mode, and
// every partition of a model-parallel replica (its network is then a dist::PartitionedMlp: the
// partitions run the same loop in step, and agree on when to stop).
//
//   LocalStrategy strategy(optim::MakeOptimizer(opt, 0, model.NumParams()), clip_norm);
//   Trainer trainer(model, options, train_set, &test_set, scaling, strategy);
//   trainer.InitParams();
//   Result<StopReason> why = trainer.Run(listener);
//
// Resuming: restore params(), the optimizer state and set_position() from a checkpoint; the data
// order is a pure function of (seed, epoch), so the run continues exactly where it left off.
// One thread at a time; the referenced model, datasets and strategy must outlive the Trainer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/data/augment.h"
#include "core/data/dataset.h"
#include "core/data/sampler.h"
#include "core/math/buffer.h"
#include "core/model/model.h"
#include "core/model/network.h"
#include "core/optim/schedule.h"
#include "core/status.h"
#include "core/train/early_stopping.h"
#include "core/train/metrics.h"
#include "core/train/strategy.h"

namespace dtrain::train {

struct TrainOptions {
  std::int64_t epochs = 10;         // stop after this many epochs (0: no epoch limit)
  std::int64_t steps = 0;           // stop after this many optimizer steps (0: no step limit)
  int batch_size = 64;              // per replica
  std::uint64_t seed = 1;           // initialisation and data order
  std::int64_t eval_every = 0;      // steps between evaluations (0: at the end of every epoch)
  std::int64_t log_every = 100;     // steps between train_* metrics
  double target_accuracy = 0.0;     // stop once eval accuracy reaches it (0: off)
  EarlyStoppingOptions early_stopping;  // stop once evaluations stop improving (patience 0: off)
  // Judge every evaluation by early_stopping's metric and min_delta (also with patience 0) and
  // hand the listener each one that improves on the best so far (TrainListener::Improved).
  bool keep_best = false;
  bool fail_on_divergence = true;   // a non-finite train_loss ends Run with a divergence error
  float weight_decay = 0.0f;        // L2 on weights (not biases)
  optim::ScheduleOptions schedule;  // total_steps 0 means "the planned run length"
  bool learning_rate = true;        // the optimizer steps by schedule.lr (not FTRL): the lr metric
  int rank = 0;
  int world_size = 1;
  data::ShardMode sharding = data::ShardMode::kContiguousShards;  // kGlobalBatches: sync modes
  // kGlobalBatches: the rows of a step over all replicas (0: world_size x batch_size). An elastic
  // job keeps it at cluster.workers x batch_size whatever its world, so each replica's share is
  // about global_batch / world_size rows.
  std::size_t global_batch = 0;
  // kGlobalBatches with backup workers: how many replicas a step may go on without (the strategy
  // says which it took, Strategy::TakenMasks); their rows are owed to the next step
  // (data::OwedAfter), so shares grow to at most ceil((G + N - 1) / (N - backup_workers)) rows.
  int backup_workers = 0;
  // Elastic jobs (kGlobalBatches, global_batch set): the fewest and most members a membership
  // may have, each going on without min(backup_workers, members - 1) of them; 0: not elastic.
  // Rows one membership owes carry over to the next, so Capacity bounds a share over all of them.
  int fewest_members = 0;
  int most_members = 0;
  int eval_batch_size = 1000;
  data::AugmentOptions augment;  // applied to training batches of images (see data/augment.h)
};

// How Run's error starts when the training loss became non-finite and fail_on_divergence is set
// ("diverged: train_loss became nan at step 40 ..."): the one mark of a divergence, which no
// restart can mend.
inline constexpr std::string_view kDivergedPrefix = "diverged: ";
bool IsDivergence(const Status& status);
// The one judgement of a logged training loss, for every trainer: Ok while it is finite or
// options.fail_on_divergence is off, else the divergence error naming the value, the step and
// `remedy` (what the job file can change: "lower optimizer.lr, or ...").
Status JudgeTrainLoss(const TrainOptions& options, double loss, std::int64_t step,
                      std::string_view remedy);

// The one judgement of an evaluation, for every training loop (dense, sparse, L-BFGS): the stop
// it asks for, if any — train.target_accuracy reached (`accuracy` is NaN for regression, which
// never reaches it), else train.early_stopping's patience run out at `step`. `early` judges every
// evaluation by options.early_stopping's metric, also one that reaches the target, so its state
// is the same whichever stop comes first; with options.keep_best, `improved` is called with the
// metric's value when the evaluation improves on the best so far (the caller keeps the model it
// evaluated).
std::optional<StopReason> JudgeEvaluation(const TrainOptions& options, EarlyStopping& early,
                                          std::int64_t step, double loss, double accuracy,
                                          const std::function<void(double)>& improved);

// The next batch the loop will run; a checkpoint stores it.
struct TrainPosition {
  std::int64_t step = 0;    // optimizer steps completed
  std::uint64_t epoch = 0;  // current epoch (0-based)
  std::size_t batch = 0;    // next batch within the epoch
};

struct EvalResult {
  double loss = 0.0;      // mean loss over the set (mse for regression)
  double accuracy = 0.0;  // fraction correct; NaN for regression
  std::size_t rows = 0;
  // Binary sparse models (core/sparse): the area under the ROC curve; NaN otherwise.
  double auc = std::numeric_limits<double>::quiet_NaN();
};

// Steps a run of `options` takes, from its epochs and steps limits (the smaller, where both are
// set), with `steps_per_epoch` steps an epoch.
std::int64_t PlannedSteps(const TrainOptions& options, std::size_t steps_per_epoch);
// Moves `position` past one step; true when that step ended an epoch.
bool AdvanceStep(TrainPosition& position, std::size_t steps_per_epoch);
// Fractional epochs completed at `position`.
double EpochsDone(const TrainPosition& position, std::size_t steps_per_epoch);

class Trainer;

// Receives the loop's metrics and may stop it. Called on the training thread.
class TrainListener : public MetricSink {
 public:
  // After every optimizer step; return false to stop (the step stays applied).
  virtual bool AfterStep(const Trainer& trainer) = 0;
  // Each step once its batch is taken, before any of its gradient leaves the replica:
  // trainer.last_batch() is that step's. A step redone later (a restart, a regroup) comes again.
  virtual void Taking(const Trainer& trainer) { (void)trainer; }
  // With options().keep_best: an evaluation improved on the best so far, by `value` of
  // options().early_stopping.metric. trainer.params() are the parameters it evaluated (batch
  // norm statistics included) and position().step their step, until the loop steps again.
  virtual void Improved(const Trainer& trainer, double value) {
    (void)trainer;
    (void)value;
  }
};

// A listener that drops every metric and never stops the loop (benchmarks, tests).
class NullListener final : public TrainListener {
 public:
  void Record(std::span<const MetricPoint>) override {}
  bool AfterStep(const Trainer&) override { return true; }
};

// The image shape a row of `set` has for `spec`: the model's input shape where it has a height
// and width, else the data's own (IDX and NumPy images); none for flat rows. Augmentation needs
// one.
std::optional<data::ImageShape> ImageOf(const model::ModelSpec& spec, const data::Dataset& set);

class Trainer {
 public:
  // The whole model, trained in this process.
  Trainer(const model::Model& model, TrainOptions options, const data::Dataset& train,
          const data::Dataset* eval, data::Scaling scaling, Strategy& strategy);
  // A network: this process's partition of a model (or the whole of one). The network must
  // outlive the Trainer and hold a workspace for max(batch_size, eval_batch_size) rows.
  Trainer(model::Network& network, TrainOptions options, const data::Dataset& train,
          const data::Dataset* eval, data::Scaling scaling, Strategy& strategy);

  // Fresh parameters from the model's initialisation scheme and options.seed.
  void InitParams();

  Result<StopReason> Run(TrainListener& listener);
  // Fails only where the network talks to other partitions.
  Result<EvalResult> Evaluate(const data::Dataset& set);

  std::span<float> params() { return params_; }
  std::span<const float> params() const { return params_; }
  const TrainPosition& position() const { return position_; }
  // A checkpoint's position: it owes no rows (a checkpoint follows a step that took every
  // replica's gradient).
  void set_position(const TrainPosition& position) {
    position_ = position;
    owed_.clear();
  }
  // After set_position: the rows a regroup's leader owed to its next step (an elastic job with
  // backup workers, whose members all stand after the same step with the same masks).
  void set_owed(std::span<const std::uint32_t> owed) { owed_.assign(owed.begin(), owed.end()); }
  // The epoch's positions the next step takes before its fresh ones: rows of earlier steps that
  // went on without some replicas (backup workers). Empty at every epoch's start and checkpoint.
  const std::vector<std::uint32_t>& owed() const { return owed_; }
  // The step Run is taking or took last (for a listener's Taking and AfterStep): where in the
  // epoch order it stood (`epoch`, `batch`; `step` the steps completed before it) and this
  // replica's training rows in it, valid until the next step. After the step (AfterStep), with
  // backup workers, `masks`: which ranks' gradients the step took, and the steps this replica
  // skipped after it (Strategy::TakenMasks); empty when every rank's was.
  struct TakenBatch {
    TrainPosition at;
    std::span<const std::uint32_t> rows;
    std::span<const std::uint64_t> masks;
  };
  const TakenBatch& last_batch() const { return last_batch_; }
  std::size_t StepsPerEpoch() const { return sampler_.StepsPerEpoch(); }
  // The training rows an epoch takes over all replicas.
  std::size_t RowsPerEpoch() const { return train_.rows; }
  // Steps the whole run takes, from the epochs/steps limits.
  std::int64_t PlannedSteps() const;
  double Epochs() const;  // fractional epochs completed
  const TrainOptions& options() const { return options_; }
  // train.early_stopping's judgement of the evaluations so far (a checkpoint stores its state;
  // Run's kEarlyStopped reason is its Describe).
  const EarlyStopping& early_stopping() const { return early_stopping_; }
  EarlyStopping& early_stopping() { return early_stopping_; }
  Strategy& strategy() { return strategy_; }
  const model::Network& network() const { return network_; }
  // The rows a network for `options` must hold at once: the largest share of a step (at least
  // batch_size; an elastic job's, over every membership it may have) or an evaluation's.
  static int Capacity(const TrainOptions& options);
  // The rows an evaluation takes at once: `wanted`, but only as many as keep its activations
  // within 32 MiB, unless the training batch (never fewer rows) needs more. A wide
  // convolutional model evaluates in small chunks; an MLP in `wanted` rows.
  static int EvalBatchRows(const model::ModelSpec& spec, int batch_size, int wanted);

 private:
  Trainer(std::unique_ptr<model::LocalNetwork> owned, model::Network* network, TrainOptions options,
          const data::Dataset& train, const data::Dataset* eval, data::Scaling scaling,
          Strategy& strategy);
  bool Finished() const;
  // Moves the position past the step just applied and any the strategy went on to without this
  // replica (TakenMasks), owing the rows of the ranks left out; true when an epoch ended.
  bool AdvancePastApplied();
  // The batch's rows into x_ and y_, on the network's team where it has one.
  void GatherInSlices(std::span<const std::uint32_t> batch);
  void EmitEval(TrainListener& listener, const EvalResult& result);

  std::unique_ptr<model::LocalNetwork> owned_;  // the network, when built from a Model
  model::Network& network_;
  TrainOptions options_;
  const data::Dataset& train_;
  const data::Dataset* eval_;  // may be null: no evaluation
  data::Scaling scaling_;
  Strategy& strategy_;
  data::BatchSampler sampler_;
  // The parameters: in the strategy's ParameterStorage() if it gave any (asked only of a model
  // without running statistics, which each replica keeps its own of), else in param_buffer_.
  math::FloatBuffer param_buffer_;
  std::span<float> params_;
  math::FloatBuffer x_;
  std::vector<float> y_;
  // The gradient, then the strategy's GradientTail(): in the strategy's GradientStorage() if it
  // gave any, else in grad_buffer_.
  std::span<float> grad_storage_;
  math::FloatBuffer grad_buffer_;
  std::span<float> grad_;  // the gradient: the first NumParams() floats of either
  std::vector<std::uint32_t> eval_indices_;
  TrainPosition position_;
  EarlyStopping early_stopping_;
  std::vector<std::uint32_t> owed_, next_owed_;  // see owed(); next_owed_: OwedAfter's scratch
  std::vector<std::uint64_t> masks_;             // the last Apply's TakenMasks
  std::int64_t dropped_ = 0;                     // steps taken without this replica's gradient
  TakenBatch last_batch_;
  data::ImageShape image_;      // what augmentation sees a row as
  std::vector<float> augment_;  // one image: augmentation's scratch
  // The running statistics (batchnorm's), kept across the strategy's Apply: each replica's own,
  // whatever parameters the strategy brings back (parameter servers hold their initial values).
  std::vector<float> statistics_;
};

}  // namespace dtrain::train
