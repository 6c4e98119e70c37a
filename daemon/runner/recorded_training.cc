#include "daemon/runner/recorded_training.h"

#include <chrono>

#include "daemon/runner/trainer_checkpoint.h"

namespace dtrain::runner {
namespace {

using Clock = std::chrono::steady_clock;

// Forwards metrics to the recorder and the observer; asks the loop to stop when a checkpoint is
// due or a stop was requested.
class RecordingListener final : public train::TrainListener {
 public:
  RecordingListener(const config::CheckpointConfig& policy, RunRecorder& recorder,
                    const RunOptions& options, const train::Trainer& trainer)
      : policy_(policy), recorder_(recorder), options_(options), trainer_(trainer) {}

  void Record(std::span<const train::MetricPoint> points) override {
    recorder_.RecordMetrics(points);
    if (options_.observer != nullptr) options_.observer->OnMetrics(trainer_, points);
  }

  bool AfterStep(const train::Trainer& trainer) override {
    const std::int64_t step = trainer.position().step;
    const bool by_steps = policy_.every_steps > 0 && step % policy_.every_steps == 0;
    const bool by_time =
        policy_.every_seconds > 0 &&
        std::chrono::duration<double>(Clock::now() - last_checkpoint_).count() >=
            policy_.every_seconds;
    stop_requested_ = options_.stop != nullptr && options_.stop->load();
    if (by_steps || by_time) checkpoint_due_ = true;
    return !stop_requested_ && !checkpoint_due_;
  }

  bool checkpoint_due() const { return checkpoint_due_; }
  bool stop_requested() const { return stop_requested_; }
  void CheckpointTaken() {
    checkpoint_due_ = false;
    last_checkpoint_ = Clock::now();
  }

 private:
  const config::CheckpointConfig& policy_;
  RunRecorder& recorder_;
  const RunOptions& options_;
  const train::Trainer& trainer_;
  Clock::time_point last_checkpoint_ = Clock::now();
  bool checkpoint_due_ = false;
  bool stop_requested_ = false;
};

}  // namespace

Result<train::StopReason> TrainRecorded(train::Trainer& trainer,
                                        const config::CheckpointConfig& policy,
                                        RunRecorder& recorder, const RunOptions& options,
                                        std::int64_t last_saved_step) {
  RecordingListener listener(policy, recorder, options, trainer);
  auto save = [&]() -> Status {
    if (trainer.position().step == last_saved_step) return Status::Ok();
    Status saved = recorder.SaveCheckpoint(CaptureCheckpoint(trainer));
    if (!saved.ok()) return Status::Error("checkpoint failed: " + saved.message());
    last_saved_step = trainer.position().step;
    listener.CheckpointTaken();
    if (options.observer != nullptr) options.observer->OnCheckpoint(trainer);
    return Status::Ok();
  };

  // Train in legs between checkpoints: the listener stops the loop when one is due, it is
  // written here (the trainer is idle), and the loop goes on where it stopped.
  while (true) {
    Result<train::StopReason> why = trainer.Run(listener);
    if (!why.ok()) return why;
    const bool more = why.value() == train::StopReason::kRequested && !listener.stop_requested();
    if (listener.checkpoint_due() || !more) {
      Status saved = save();
      if (!saved.ok()) return saved;
    }
    if (!more) return why;
  }
}

}  // namespace dtrain::runner
