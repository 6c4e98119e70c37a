#include "daemon/runner/sparse_run.h"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "core/sparse/streamed_batches.h"
#include "daemon/runner/sparse_checkpoint.h"

namespace dtrain::runner {
namespace {

// Forwards the loop's metrics, steps and improving evaluations to the run's recording; an
// improving evaluation's model is taken from where it lives by `model`.
class SparseRecordingListener final : public sparse::SparseListener {
 public:
  SparseRecordingListener(RunRecording& recording,
                          std::function<Result<store::CheckpointData>()> model)
      : recording_(recording), model_(std::move(model)) {}
  void Record(std::span<const train::MetricPoint> points) override { recording_.Record(points); }
  bool AfterStep(const sparse::SparseTrainer&) override { return recording_.AfterStep(); }
  void Improved(const sparse::SparseTrainer& trainer, double value) override {
    const std::string_view metric =
        train::EarlyStoppingMetricName(trainer.options().early_stopping.metric);
    recording_.KeepBest(
        {.step = trainer.position().step, .metric = std::string(metric), .value = value}, model_);
  }

 private:
  RunRecording& recording_;
  std::function<Result<store::CheckpointData>()> model_;
};

// Records how many of the trained model's weights (its keys' slots and its globals) are not 0,
// as nonzero_weights, and says so when none is: such a model predicts the same for every row.
Status RecordNonzeroWeights(const config::JobConfig& job, const SparsePlace& place,
                            const RunProgress& at, RunRecording& recording,
                            const RunOptions& options) {
  Result<sparse::KeyTableState> state = place.snapshot();
  if (!state.ok()) return state.status();
  const auto nonzero = [](const std::vector<float>& v) {
    return std::count_if(v.begin(), v.end(), [](float w) { return w != 0.0f; });
  };
  const auto count = nonzero(state.value().slots) + nonzero(state.value().globals);
  const train::MetricPoint point{at.step, at.epochs, std::string(train::kNonzeroWeights),
                                 static_cast<double>(count)};
  recording.Record({&point, 1});
  if (count == 0 && options.observer != nullptr) {
    char why[160] = "";
    if (job.optimizer.type == optim::OptimizerType::kFtrl) {
      std::snprintf(why, sizeof why,
                    ": optimizer.l1 = %g zeroes every weight whose summed gradient stays within "
                    "it; lower it",
                    job.optimizer.l1);
    }
    options.observer->OnEvent(
        std::string("warning: every weight of the trained model is 0, so it predicts the same "
                    "for every row (AUC 0.5)") +
        why);
  }
  return Status::Ok();
}

// A replica's training batches: its share of the rows in memory, or of the streamed file's
// blocks.
Result<std::unique_ptr<sparse::SparseBatchSource>> TrainingBatches(
    const SparseJobData& data, const train::TrainOptions& options, bool collective) {
  const auto batch_size = static_cast<std::size_t>(options.batch_size);
  if (data.stream) {
    Result<std::unique_ptr<sparse::StreamedBatches>> streamed = sparse::StreamedBatches::Open(
        *data.stream, batch_size, options.seed, options.rank, options.world_size);
    if (!streamed.ok()) return streamed.status();
    return std::unique_ptr<sparse::SparseBatchSource>(std::move(streamed).value());
  }
  return std::unique_ptr<sparse::SparseBatchSource>(std::make_unique<sparse::SampledBatches>(
      data.train, batch_size, options.seed, options.rank, options.world_size,
      sparse::ReplicaShardMode(collective)));
}

}  // namespace

RunSubject SubjectOf(const SparseJobData& data) {
  return {data.TrainRows(), sparse::FormatSparseModelSpec(data.spec), data.eval_name, ""};
}

train::TrainOptions SparseTrainOptions(const config::JobConfig& job) {
  train::TrainOptions options = config::TrainOptionsOf(job);
  options.schedule.lr = config::ScaledLearningRate(job);
  options.learning_rate = job.optimizer.type != optim::OptimizerType::kFtrl;
  return options;
}

Result<SparseRunResult> RunSparse(const config::JobConfig& job, const SparseJobData& data,
                                  RunRecorder& recorder, const RunOptions& options,
                                  const store::CheckpointData* resume) {
  const sparse::SparseModel model(data.spec);
  sparse::KeyTable table(model, job.optimizer, job.train.seed);
  sparse::LocalSparseParameters params(table);
  if (resume != nullptr) {
    Result<train::TrainPosition> restored =
        RestoreSparseCheckpoint(*resume, data.spec, job.train.seed, table);
    if (!restored.ok()) return restored.status();
  }
  const SparsePlace place{params,
                          [&]() -> Result<sparse::KeyTableState> { return table.Snapshot(); }};
  return RunSparseOn(job, data, place, 0, recorder, options, resume);
}

Result<SparseRunResult> RunSparseOn(const config::JobConfig& job, const SparseJobData& data,
                                    const SparsePlace& place, int replica, RunRecorder& recorder,
                                    const RunOptions& options,
                                    const store::CheckpointData* resume) {
  const sparse::SparseModel model(data.spec);
  train::TrainOptions train_options = SparseTrainOptions(job);
  train_options.rank = replica;
  train_options.world_size = job.cluster.workers;
  Result<std::unique_ptr<sparse::SparseBatchSource>> batches =
      TrainingBatches(data, train_options, place.params.Collective());
  if (!batches.ok()) return batches.status();
  sparse::SparseTrainer trainer(model, train_options, *batches.value(),
                                data.eval.rows() > 0 ? &data.eval : nullptr, place.params);
  if (resume != nullptr) {
    trainer.set_position({resume->step, resume->epoch, static_cast<std::size_t>(resume->batch)});
    trainer.early_stopping().Restore(resume->early_stopping);
  }
  const auto progress = [&] {
    return RunProgress{.step = trainer.position().step,
                       .planned_steps = trainer.PlannedSteps(),
                       .epoch = trainer.position().epoch,
                       .epochs = trainer.Epochs(),
                       .planned_epochs = job.train.epochs,
                       .params = place.params.KeyCount() * model.SlotWidth() + model.GlobalWidth(),
                       .feature_keys = data.train.features,
                       .params_per_key = model.SlotWidth()};
  };
  // The whole model where it lives now, as a checkpoint (also an improving evaluation's model).
  const auto capture = [&]() -> Result<store::CheckpointData> {
    Result<sparse::KeyTableState> state = place.snapshot();
    if (!state.ok()) return state.status();
    return SparseCheckpoint(std::move(state).value(), data.spec, trainer.position(), job.train.seed,
                            trainer.early_stopping().state());
  };
  const auto write = [&]() -> Status {
    Result<store::CheckpointData> checkpoint = capture();
    if (!checkpoint.ok()) return checkpoint.status();
    return recorder.SaveCheckpoint(store::ViewOf(checkpoint.value()));
  };
  RunRecording recording(job.checkpoint, recorder, options, resume ? resume->step : -1, progress,
                         write);
  if (options.observer != nullptr) {
    RunSubject subject = SubjectOf(data);
    subject.optimizer = OptimizerSettings(job);
    options.observer->OnStart(progress(), subject, resume != nullptr);
  }
  SparseRecordingListener listener(recording, capture);
  Result<train::StopReason> why = trainer.Run(listener);
  if (!why.ok()) return why.status();
  if (options.checkpoints) {  // replica 0: the model's own
    if (Status s = RecordNonzeroWeights(job, place, progress(), recording, options); !s.ok()) {
      return s;
    }
  }
  if (Status finished = recording.Finish(); !finished.ok()) return finished;

  SparseRunResult result;
  result.why = why.value();
  result.steps = trainer.position().step;
  result.keys = place.params.KeyCount();
  result.early_stopping = trainer.early_stopping();
  if (data.eval.rows() > 0) {
    Result<sparse::SparseEvalResult> final_eval = trainer.Evaluate(data.eval);
    if (!final_eval.ok()) return final_eval.status();
    result.final_eval = final_eval.value();
  }
  return result;
}

}  // namespace dtrain::runner
