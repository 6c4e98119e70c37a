// SparseTrainer: the training loop of a sparse model — batches of sparse rows, the parameters of
// the keys each batch touches pulled from where they live, forward and backward on those alone,
// the gradients of those keys pushed back — with periodic evaluation (loss, accuracy, and AUC for
// binary models) and a stream of metrics. Where the parameters live is a SparseParameters: a
// KeyTable in this process (LocalSparseParameters), or parameter-server shards.
//
//   KeyTable table(model, job.optimizer, seed);
//   LocalSparseParameters params(table);
//   SparseTrainer trainer(model, options, train_rows, &test_rows, params);   // or a batch source
//   Result<train::StopReason> why = trainer.Run(listener);
//
// Metrics (train/metrics.h names, plus the sparse ones): every log_every steps train_loss,
// train_accuracy, lr, samples_per_sec, keys_per_step (the distinct keys a step pulled and pushed,
// averaged over the window), bytes_per_step (what those keys' slots and gradients move: keys x
// (4 + 4 x SlotWidth()) bytes each way), model_keys (the keys held so far) and, where the keys
// live on parameter servers, bytes_sent and bytes_received (measured, headers included); every
// evaluation eval_loss, eval_accuracy and, for logistic and fm, eval_auc. Each evaluation is
// judged as the dense Trainer's are (train::JudgeEvaluation: target accuracy, early stopping, the
// best model).
//
// Resuming: restore the parameters where they live and set_position(); the data order is a pure
// function of (seed, epoch), as the dense Trainer's. One thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/data/sampler.h"
#include "core/data/sparse_rows.h"
#include "core/sparse/key_table.h"
#include "core/sparse/sparse_batch.h"
#include "core/sparse/sparse_batches.h"
#include "core/sparse/sparse_model.h"
#include "core/status.h"
#include "core/train/metrics.h"
#include "core/train/strategy.h"
#include "core/train/trainer.h"

namespace dtrain::sparse {

// Where a sparse model's parameters live, as the loop sees them.
class SparseParameters {
 public:
  virtual ~SparseParameters() = default;
  // The slots of `keys` (unique) into slots [keys x SlotWidth()], made where missing,
  // and the globals into `globals`.
  virtual Status Pull(std::span<const std::uint32_t> keys, float* slots, float* globals) = 0;
  // One optimizer step on the keys' slots and the globals, from their gradients: the mean over
  // the batch's `rows` rows.
  virtual Status Push(std::span<const std::uint32_t> keys, const float* grad_slots,
                      const float* grad_globals, float lr, std::size_t rows) = 0;
  // As Pull, but a key never touched reads as zeros and is not made (evaluation, prediction).
  virtual Status Lookup(std::span<const std::uint32_t> keys, float* slots, float* globals) = 0;
  // Keys held so far, over every place they live.
  virtual std::uint64_t KeyCount() const = 0;
  // What moving them has cost so far (zero where they live in this process).
  virtual train::CommStats Stats() const { return {}; }

  // Collective places (sync on parameter servers) apply a step once every replica has pushed
  // it, so every replica pushes at every step, an empty batch too, and they agree when to stop
  // as train::Strategy's collective contract says: ProposeStop, keep training, stop after the
  // step AgreedStop() names. Independent places refuse the proposal: the caller stops at once.
  virtual bool Collective() const { return false; }
  virtual bool ProposeStop(train::StopReason /*reason*/) { return false; }
  virtual std::optional<train::StopReason> AgreedStop() const { return std::nullopt; }
};

// A KeyTable of this process.
class LocalSparseParameters final : public SparseParameters {
 public:
  explicit LocalSparseParameters(KeyTable& table) : table_(table) {}
  Status Pull(std::span<const std::uint32_t> keys, float* slots, float* globals) override;
  Status Push(std::span<const std::uint32_t> keys, const float* grad_slots,
              const float* grad_globals, float lr, std::size_t rows) override;
  Status Lookup(std::span<const std::uint32_t> keys, float* slots, float* globals) override;
  std::uint64_t KeyCount() const override { return table_.size(); }

 private:
  KeyTable& table_;
};

// An evaluation of a sparse model on a set of rows.
struct SparseEvalResult {
  double loss = 0.0;  // mean
  double accuracy = 0.0;
  double auc = 0.0;  // NaN for softmax, or a set with one class only
  std::size_t rows = 0;
};

// The scores (logits, rows x Outputs()) of every row of `rows`, evaluated `chunk` rows at a time
// through params.Lookup.
Result<std::vector<float>> ScoreRows(const SparseModel& model, SparseParameters& params,
                                     const data::SparseRows& rows, std::size_t chunk);
// Loss, accuracy and AUC of scores from ScoreRows against the rows' labels.
SparseEvalResult MeasureScores(const SparseModel& model, std::span<const float> scores,
                               std::span<const float> labels);

class SparseTrainer;

// Receives the loop's metrics and may stop it; called on the training thread.
class SparseListener : public train::MetricSink {
 public:
  // After every step; false stops the loop (the step stays applied).
  virtual bool AfterStep(const SparseTrainer& trainer) = 0;
  // With options().keep_best: an evaluation improved on the best so far, by `value` of
  // options().early_stopping.metric (train::JudgeEvaluation). The parameters hold the model it
  // evaluated, after position().step steps, until the loop pushes again.
  virtual void Improved(const SparseTrainer& trainer, double value) {
    (void)trainer;
    (void)value;
  }
};

class SparseTrainer {
 public:
  // options: epochs, steps, batch_size, seed, eval_every, log_every, target_accuracy,
  // early_stopping, keep_best, schedule, rank and world_size, eval_batch_size. A replica's batches
  // are its contiguous share of each epoch's rows, or, where the parameters are collective (sync),
  // its part of each step's global batch (data::ShardMode::kGlobalBatches: N replicas of batch b
  // train like one of batch N b). The model, rows and parameters must outlive the trainer; `eval`
  // may be null.
  SparseTrainer(const SparseModel& model, train::TrainOptions options,
                const data::SparseRows& train, const data::SparseRows* eval,
                SparseParameters& params);
  // As above, the batches from `batches` (which must outlive the trainer).
  SparseTrainer(const SparseModel& model, train::TrainOptions options, SparseBatchSource& batches,
                const data::SparseRows* eval, SparseParameters& params);

  Result<train::StopReason> Run(SparseListener& listener);
  Result<SparseEvalResult> Evaluate(const data::SparseRows& rows);

  const train::TrainPosition& position() const { return position_; }
  void set_position(const train::TrainPosition& position) { position_ = position; }
  std::int64_t PlannedSteps() const;
  double Epochs() const;
  const train::TrainOptions& options() const { return options_; }
  // train.early_stopping's judgement of the evaluations so far (a checkpoint stores its state;
  // Run's kEarlyStopped reason is its Describe).
  const train::EarlyStopping& early_stopping() const { return early_stopping_; }
  train::EarlyStopping& early_stopping() { return early_stopping_; }

 private:
  SparseTrainer(const SparseModel& model, train::TrainOptions options,
                std::unique_ptr<SparseBatchSource> owned, SparseBatchSource* batches,
                const data::SparseRows* eval, SparseParameters& params);
  bool Finished() const { return position_.step >= PlannedSteps(); }
  std::vector<train::MetricPoint> EvalPoints(const SparseEvalResult& result) const;

  const SparseModel& model_;
  train::TrainOptions options_;
  std::unique_ptr<SparseBatchSource> owned_batches_;  // the first constructor's
  SparseBatchSource& batches_;                        // *owned_batches_, or the caller's
  const data::SparseRows* eval_;
  SparseParameters& params_;
  train::TrainPosition position_;
  train::EarlyStopping early_stopping_;
  SparseBatch batch_;
  std::vector<float> slots_, globals_, grad_slots_, grad_globals_;
};

}  // namespace dtrain::sparse
