#include "daemon/runner/recorded_training.h"

#include <sys/resource.h>

#include <chrono>

#include "daemon/runner/trainer_checkpoint.h"

namespace dtrain::runner {
namespace {

using Clock = std::chrono::steady_clock;

// Forwards metrics to the recorder and the observer; takes checkpoints between steps when due
// (the trainer is idle then); asks the loop to stop when a stop was requested or a checkpoint
// failed.
class RecordingListener final : public train::TrainListener {
 public:
  RecordingListener(const config::CheckpointConfig& policy, RunRecorder& recorder,
                    const RunOptions& options, train::Trainer& trainer,
                    std::int64_t last_saved_step)
      : policy_(policy),
        recorder_(recorder),
        options_(options),
        trainer_(trainer),
        last_saved_step_(last_saved_step) {}

  void Record(std::span<const train::MetricPoint> points) override {
    recorder_.RecordMetrics(points);
    if (options_.observer != nullptr) options_.observer->OnMetrics(ProgressOf(trainer_), points);
  }

  bool AfterStep(const train::Trainer&) override {
    const std::int64_t step = trainer_.position().step;
    const bool by_steps = policy_.every_steps > 0 && step % policy_.every_steps == 0;
    const bool by_time =
        policy_.every_seconds > 0 &&
        std::chrono::duration<double>(Clock::now() - last_checkpoint_).count() >=
            policy_.every_seconds;
    if ((by_steps || by_time) && failure_.ok()) failure_ = Save();
    stop_requested_ = options_.stop != nullptr && options_.stop->load();
    return !stop_requested_ && failure_.ok();
  }

  // Writes a checkpoint of the trainer's state now, unless this step's is written already.
  Status Save() {
    if (!options_.checkpoints || trainer_.position().step == last_saved_step_) return Status::Ok();
    Status saved;
    if (options_.capture) {
      Result<store::CheckpointData> captured = options_.capture(trainer_);
      if (!captured.ok()) return Status::Error("checkpoint failed: " + captured.status().message());
      saved = recorder_.SaveCheckpoint(store::ViewOf(captured.value()));
    } else {
      saved = recorder_.SaveCheckpoint(ViewCheckpoint(trainer_));
    }
    if (!saved.ok()) return Status::Error("checkpoint failed: " + saved.message());
    last_saved_step_ = trainer_.position().step;
    last_checkpoint_ = Clock::now();
    if (options_.observer != nullptr) options_.observer->OnCheckpoint(ProgressOf(trainer_));
    return Status::Ok();
  }

  const Status& failure() const { return failure_; }

 private:
  const config::CheckpointConfig& policy_;
  RunRecorder& recorder_;
  const RunOptions& options_;
  train::Trainer& trainer_;
  std::int64_t last_saved_step_;
  Clock::time_point last_checkpoint_ = Clock::now();
  bool stop_requested_ = false;
  Status failure_;
};

}  // namespace

RunProgress ProgressOf(const train::Trainer& trainer) {
  return {.step = trainer.position().step,
          .planned_steps = trainer.PlannedSteps(),
          .epoch = trainer.position().epoch,
          .epochs = trainer.Epochs(),
          .planned_epochs = trainer.options().epochs,
          .params = trainer.network().NumParams()};
}

Result<train::StopReason> TrainRecorded(train::Trainer& trainer,
                                        const config::CheckpointConfig& policy,
                                        RunRecorder& recorder, const RunOptions& options,
                                        std::int64_t last_saved_step) {
  RecordingListener listener(policy, recorder, options, trainer, last_saved_step);
  Result<train::StopReason> why = trainer.Run(listener);
  if (!why.ok()) return why;
  if (!listener.failure().ok()) return listener.failure();
  Status saved = listener.Save();  // the end, whatever stopped it
  if (!saved.ok()) return saved;
  // The process's peak resident memory over its life, for sizing jobs and their memory_limit.
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  const train::MetricPoint peak{trainer.position().step, trainer.Epochs(), "peak_rss_bytes",
                                static_cast<double>(usage.ru_maxrss) * 1024.0};
  recorder.RecordMetrics({&peak, 1});
  return why;
}

}  // namespace dtrain::runner
