#include "daemon/runner/sparse_run.h"

#include "daemon/runner/sparse_checkpoint.h"

namespace dtrain::runner {
namespace {

// Forwards the loop's metrics and steps to the run's recording.
class SparseRecordingListener final : public sparse::SparseListener {
 public:
  explicit SparseRecordingListener(RunRecording& recording) : recording_(recording) {}
  void Record(std::span<const train::MetricPoint> points) override { recording_.Record(points); }
  bool AfterStep(const sparse::SparseTrainer&) override { return recording_.AfterStep(); }

 private:
  RunRecording& recording_;
};

}  // namespace

RunSubject SubjectOf(const SparseJobData& data) {
  return {data.train.rows(), sparse::FormatSparseModelSpec(data.spec), data.eval_name};
}

train::TrainOptions SparseTrainOptions(const config::JobConfig& job) {
  train::TrainOptions options = job.train;
  options.schedule.lr = config::ScaledLearningRate(job);
  return options;
}

Result<SparseRunResult> RunSparse(const config::JobConfig& job, const SparseJobData& data,
                                  RunRecorder& recorder, const RunOptions& options,
                                  const store::CheckpointData* resume) {
  const sparse::SparseModel model(data.spec);
  sparse::KeyTable table(model, job.optimizer, job.train.seed);
  sparse::LocalSparseParameters params(table);
  sparse::SparseTrainer trainer(model, SparseTrainOptions(job), data.train,
                                data.eval.rows() > 0 ? &data.eval : nullptr, params);
  if (resume != nullptr) {
    Result<train::TrainPosition> at =
        RestoreSparseCheckpoint(*resume, data.spec, job.train.seed, table);
    if (!at.ok()) return at.status();
    trainer.set_position(at.value());
  }
  const auto progress = [&] {
    return RunProgress{.step = trainer.position().step,
                       .planned_steps = trainer.PlannedSteps(),
                       .epoch = trainer.position().epoch,
                       .epochs = trainer.Epochs(),
                       .planned_epochs = job.train.epochs,
                       .params = table.size() * model.SlotWidth() + model.GlobalWidth()};
  };
  const auto write = [&] {
    return recorder.SaveCheckpoint(store::ViewOf(
        SparseCheckpoint(table.Snapshot(), data.spec, trainer.position(), job.train.seed)));
  };
  RunRecording recording(job.checkpoint, recorder, options, resume != nullptr ? resume->step : -1,
                         progress, write);
  if (options.observer != nullptr) {
    options.observer->OnStart(progress(), SubjectOf(data), resume != nullptr);
  }
  SparseRecordingListener listener(recording);
  Result<train::StopReason> why = trainer.Run(listener);
  if (!why.ok()) return why.status();
  if (Status finished = recording.Finish(); !finished.ok()) return finished;

  SparseRunResult result;
  result.why = why.value();
  result.steps = trainer.position().step;
  result.keys = table.size();
  if (data.eval.rows() > 0) {
    Result<sparse::SparseEvalResult> final_eval = trainer.Evaluate(data.eval);
    if (!final_eval.ok()) return final_eval.status();
    result.final_eval = final_eval.value();
  }
  return result;
}

}  // namespace dtrain::runner
