#include "daemon/runner/recorded_training.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "core/model/model_summary.h"
#include "daemon/runner/row_recorder.h"
#include "daemon/runner/straggler.h"
#include "daemon/runner/trainer_checkpoint.h"

namespace dtrain::runner {
namespace {

using Clock = std::chrono::steady_clock;

// A dense Trainer's loop, recorded; the rows of each step where a test asks for them
// (row_recorder.h), and a slow replica where a test or bench makes one (straggler.h).
class RecordingListener final : public train::TrainListener {
 public:
  RecordingListener(RunRecording& recording, int rank, const std::function<void()>& after_step)
      : recording_(recording),
        rows_(RowRecorder::FromEnvironment(rank)),
        straggler_(Straggler::FromEnvironment(rank)),
        after_step_(after_step) {}
  void Record(std::span<const train::MetricPoint> points) override { recording_.Record(points); }
  void Taking(const train::Trainer& trainer) override {
    if (rows_) rows_->Record(trainer);
    if (straggler_) straggler_->BeforeStep(trainer.last_batch().at.step);
  }
  void Improved(const train::Trainer& trainer, double value) override {
    const std::string_view metric =
        train::EarlyStoppingMetricName(trainer.options().early_stopping.metric);
    recording_.KeepBest(
        {.step = trainer.position().step, .metric = std::string(metric), .value = value},
        ViewModel(trainer));
  }
  bool AfterStep(const train::Trainer& trainer) override {
    if (rows_) rows_->RecordMasks(trainer);
    if (after_step_) after_step_();
    return recording_.AfterStep();
  }

 private:
  RunRecording& recording_;
  std::unique_ptr<RowRecorder> rows_;
  std::unique_ptr<Straggler> straggler_;
  const std::function<void()>& after_step_;
};

}  // namespace

RunSubject SubjectOf(const JobData& data) {
  return {data.train.rows, model::SummarizeModel(data.spec), data.eval_name, ""};
}

std::string OptimizerSettings(const config::JobConfig& job) {
  if (job.optimizer.type != optim::OptimizerType::kFtrl) return "";
  char text[160];
  std::snprintf(text, sizeof text, "ftrl alpha=%g beta=%g l1=%g l2=%g", job.optimizer.alpha,
                job.optimizer.beta, job.optimizer.l1, job.optimizer.l2);
  return text;
}

RunProgress ProgressOf(const train::Trainer& trainer) {
  return {.step = trainer.position().step,
          .planned_steps = trainer.PlannedSteps(),
          .epoch = trainer.position().epoch,
          .epochs = trainer.Epochs(),
          .planned_epochs = trainer.options().epochs,
          .params = trainer.network().NumParams(),
          .batch_slices = trainer.network().BatchSlices(),
          .rows_per_epoch = trainer.options().sharding == data::ShardMode::kGlobalBatches
                                ? trainer.RowsPerEpoch()
                                : 0};
}

RunRecording::RunRecording(const config::CheckpointConfig& policy, RunRecorder& recorder,
                           const RunOptions& options, std::int64_t last_saved_step,
                           std::function<RunProgress()> progress,
                           std::function<Status()> write_checkpoint, train::Strategy* together,
                           bool backups)
    : policy_(policy),
      recorder_(recorder),
      options_(options),
      last_saved_step_(last_saved_step),
      progress_(std::move(progress)),
      write_checkpoint_(std::move(write_checkpoint)),
      together_(together),
      backups_(backups) {
  // How far the run goes, for its job's total steps and ETA, and an epoch's rows
  // (store/job_views.h). Not told to the observer: it is no progress of the run's.
  const RunProgress start = progress_();
  if (start.planned_steps > 0 && !start.iterations) {
    std::vector<train::MetricPoint> planned{{start.step, start.epochs,
                                             std::string(train::kPlannedSteps),
                                             static_cast<double>(start.planned_steps)}};
    if (start.rows_per_epoch > 0) {
      planned.push_back({start.step, start.epochs, std::string(train::kRowsPerEpoch),
                         static_cast<double>(start.rows_per_epoch)});
    }
    recorder_.RecordMetrics(planned);
  }
}

void RunRecording::Record(std::span<const train::MetricPoint> points) {
  recorder_.RecordMetrics(points);
  if (options_.observer != nullptr) options_.observer->OnMetrics(progress_(), points);
}

bool RunRecording::AfterStep() {
  const std::int64_t step = progress_().step;
  const bool by_steps = policy_.every_steps > 0 && step % policy_.every_steps == 0;
  const bool by_time = policy_.every_seconds > 0 &&
                       std::chrono::duration<double>(Clock::now() - last_checkpoint_).count() >=
                           policy_.every_seconds;
  bool due = by_steps || by_time;
  if (together_ != nullptr) {
    if (backups_ && policy_.every_steps > 0 && (step + 1) % policy_.every_steps == 0) {
      together_->ProposeCheckpoint();
    }
    if (by_time && !by_steps && options_.checkpoints) together_->ProposeCheckpoint();
    due = by_steps || together_->CheckpointAgreed();
  }
  if (options_.checkpoint_at) {
    held_ = held_ || due;
    due = held_ && options_.checkpoint_at(step);
  }
  if (due && failure_.ok()) {
    failure_ = Save();
    held_ = false;
  }
  const bool stop_requested = options_.stop != nullptr && options_.stop->load();
  return !stop_requested && failure_.ok();
}

Status RunRecording::Save() {
  const RunProgress progress = progress_();
  const bool writes = options_.checkpoints;
  if ((!writes && together_ == nullptr) || progress.step == last_saved_step_) return Status::Ok();
  if (Status saved = write_checkpoint_(); !saved.ok()) {
    return Status::Error("checkpoint failed: " + saved.message());
  }
  if (!writes) {  // this replica's part is handed over; the writer reports the checkpoint
    last_saved_step_ = progress.step;
    return Status::Ok();
  }
  last_saved_step_ = progress.step;
  last_checkpoint_ = Clock::now();
  if (options_.observer != nullptr) options_.observer->OnCheckpoint(progress);
  return Status::Ok();
}

void RunRecording::KeepBest(const store::BestModelInfo& best, const store::CheckpointView& model) {
  if (!options_.checkpoints || !failure_.ok()) return;
  if (Status saved = recorder_.SaveBestModel(best, model); !saved.ok()) {
    failure_ = Status::Error("saving the best model failed: " + saved.message());
  }
}

void RunRecording::KeepBest(const store::BestModelInfo& best,
                            const std::function<Result<store::CheckpointData>()>& take) {
  if (!options_.checkpoints || !failure_.ok()) return;
  Result<store::CheckpointData> model = take();
  if (!model.ok()) {
    failure_ = Status::Error("saving the best model failed: " + model.status().message());
    return;
  }
  KeepBest(best, store::ViewOf(model.value()));
}

Status RunRecording::Finish() {
  if (!failure_.ok()) return failure_;
  if (Status saved = Save(); !saved.ok()) return saved;  // the end, whatever stopped it
  // The process's peak resident memory over its life, for sizing jobs and their memory_limit.
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  const RunProgress progress = progress_();
  const train::MetricPoint peak{progress.step, progress.epochs, "peak_rss_bytes",
                                static_cast<double>(usage.ru_maxrss) * 1024.0};
  recorder_.RecordMetrics({&peak, 1});
  return Status::Ok();
}

Result<train::StopReason> TrainRecorded(train::Trainer& trainer,
                                        const config::CheckpointConfig& policy,
                                        RunRecorder& recorder, const RunOptions& options,
                                        std::int64_t last_saved_step) {
  train::Strategy* together =
      trainer.strategy().CollectiveCheckpoints() ? &trainer.strategy() : nullptr;
  const auto write = [&]() -> Status {
    if (Status whole = CheckNothingOwed(trainer); !whole.ok()) return whole;
    std::vector<std::vector<float>> strategy_state;
    if (together != nullptr) {
      Result<std::vector<std::vector<float>>> state = together->CheckpointState();
      if (!state.ok()) return state.status();
      if (!options.checkpoints) return Status::Ok();
      strategy_state = std::move(state).value();
    }
    if (!options.capture) return recorder.SaveCheckpoint(ViewCheckpoint(trainer, strategy_state));
    Result<store::CheckpointData> captured = options.capture(trainer);
    if (!captured.ok()) return captured.status();
    for (const std::vector<float>& v : strategy_state) {
      captured.value().optimizer_state.emplace_back(v.begin(), v.end());
    }
    return recorder.SaveCheckpoint(store::ViewOf(captured.value()));
  };
  RunRecording recording(
      policy, recorder, options, last_saved_step, [&trainer] { return ProgressOf(trainer); }, write,
      together, trainer.options().backup_workers > 0);
  RecordingListener listener(recording, trainer.options().rank, options.after_step);
  Result<train::StopReason> why = trainer.Run(listener);
  if (!why.ok()) return why;
  if (Status finished = recording.Finish(); !finished.ok()) return finished;
  return why;
}

}  // namespace dtrain::runner
