#include "daemon/runner/local_run.h"

#include <chrono>
#include <memory>

#include "core/math/gemm.h"
#include "core/model/model.h"
#include "core/optim/optimizer.h"
#include "daemon/runner/trainer_checkpoint.h"

namespace dtrain::runner {
namespace {

using Clock = std::chrono::steady_clock;
using store::JobState;

constexpr int kWorker = 0;  // `dtrain run` is a single replica

// Forwards metrics to the store and the observer; checkpoints on the job's schedule; stops on
// request.
class RecordingListener final : public train::TrainListener {
 public:
  RecordingListener(const config::JobConfig& job, std::int64_t job_id, store::Store& store,
                    const RunOptions& options)
      : job_(job), job_id_(job_id), store_(store), options_(options) {}

  void Record(std::span<const train::MetricPoint> points) override {
    store_.AppendMetrics(job_id_, kWorker, points);
    if (options_.observer != nullptr && trainer_ != nullptr) {
      options_.observer->OnMetrics(*trainer_, points);
    }
  }

  bool AfterStep(const train::Trainer& trainer) override {
    const config::CheckpointConfig& policy = job_.checkpoint;
    const std::int64_t step = trainer.position().step;
    const bool by_steps = policy.every_steps > 0 && step % policy.every_steps == 0;
    const bool by_time =
        policy.every_seconds > 0 &&
        std::chrono::duration<double>(Clock::now() - last_checkpoint_).count() >=
            policy.every_seconds;
    stop_requested_ = options_.stop != nullptr && options_.stop->load();
    if (by_steps || by_time) checkpoint_due_ = true;
    return !stop_requested_ && !checkpoint_due_;
  }

  void set_trainer(train::Trainer* trainer) { trainer_ = trainer; }
  bool checkpoint_due() const { return checkpoint_due_; }
  bool stop_requested() const { return stop_requested_; }
  void CheckpointTaken() {
    checkpoint_due_ = false;
    last_checkpoint_ = Clock::now();
  }

 private:
  const config::JobConfig& job_;
  std::int64_t job_id_;
  store::Store& store_;
  const RunOptions& options_;
  train::Trainer* trainer_ = nullptr;  // set before Run; outlives the listener's use
  Clock::time_point last_checkpoint_ = Clock::now();
  bool checkpoint_due_ = false;
  bool stop_requested_ = false;
};

// Moves the job from whatever state a previous process left it in to `starting`.
Status EnterStarting(store::Store& store, std::int64_t job_id) {
  auto record = store.GetJob(job_id);
  if (!record.ok()) return record.status();
  switch (record.value().state) {
    case JobState::kQueued:
      return store.SetJobState(job_id, JobState::kStarting, "loading data");
    case JobState::kStarting:
      return Status::Ok();
    case JobState::kRunning:
      return store.SetJobState(job_id, JobState::kRecovering,
                               "the process that ran the job stopped without finishing it");
    case JobState::kRecovering:
      return Status::Ok();
    default:
      return Status::Error("job " + std::to_string(job_id) + " is " +
                           std::string(store::JobStateName(record.value().state)) +
                           ": nothing to run");
  }
}

}  // namespace

Result<RunOutcome> RunJobInProcess(const config::JobConfig& job, std::int64_t job_id,
                                   store::Store& store, const RunOptions& options) {
  const auto started = Clock::now();
  RunOutcome outcome;
  auto finish = [&](JobState state, std::string reason) -> Result<RunOutcome> {
    outcome.state = state;
    outcome.reason = std::move(reason);
    outcome.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    store.AppendLog(job_id, kWorker, "runner", outcome.reason);
    Status flushed = store.Flush();
    if (!flushed.ok()) return flushed;
    Status moved = store.SetJobState(job_id, state, outcome.reason);
    if (!moved.ok()) return moved;
    return outcome;
  };

  Status entered = EnterStarting(store, job_id);
  if (!entered.ok()) return entered;

  auto loaded = LoadJobData(job);
  if (!loaded.ok()) return finish(JobState::kFailed, loaded.status().message());
  const JobData& data = loaded.value();
  outcome.eval_name = data.eval_name;
  outcome.classification = data.spec.loss != model::LossType::kMeanSquaredError;

  math::SetBlasThreads(job.threads);
  model::Model model(data.spec);
  train::LocalStrategy strategy(optim::MakeOptimizer(job.optimizer, 0, model.NumParams()),
                                job.clip_norm);
  train::Trainer trainer(model, job.train, data.train, data.eval.rows > 0 ? &data.eval : nullptr,
                         data.scaling, strategy);

  auto latest = store.LatestCheckpoint(job_id);
  if (!latest.ok()) return latest.status();
  for (const std::string& skipped : latest.value().skipped) {
    store.AppendLog(job_id, kWorker, "runner", "skipped damaged checkpoint: " + skipped);
  }
  if (latest.value().checkpoint.has_value()) {
    Status restored = RestoreCheckpoint(*latest.value().checkpoint, trainer);
    if (!restored.ok()) return finish(JobState::kFailed, restored.message());
    outcome.resumed_from = trainer.position().step;
  } else {
    trainer.InitParams();
  }
  const bool resumed = outcome.resumed_from >= 0;
  Status running = store.SetJobState(
      job_id, JobState::kRunning,
      resumed ? "resumed from the checkpoint at step " + std::to_string(outcome.resumed_from)
              : "training " + std::to_string(data.train.rows) + " rows, " +
                    std::to_string(model.NumParams()) + " parameters");
  if (!running.ok()) return running;
  if (options.observer != nullptr) options.observer->OnStart(trainer, data, resumed);

  RecordingListener listener(job, job_id, store, options);
  listener.set_trainer(&trainer);
  std::int64_t last_saved = resumed ? outcome.resumed_from : -1;
  auto save = [&]() -> Status {
    if (trainer.position().step == last_saved) return Status::Ok();
    Status saved = store.SaveCheckpoint(job_id, CaptureCheckpoint(trainer), job.checkpoint.keep);
    if (!saved.ok()) return saved;
    last_saved = trainer.position().step;
    listener.CheckpointTaken();
    if (options.observer != nullptr) options.observer->OnCheckpoint(trainer);
    return Status::Ok();
  };

  // Train in legs between checkpoints: the listener asks to stop when one is due, the
  // checkpoint is written here (off the step loop's hot path), and the loop continues.
  Result<train::StopReason> why = train::StopReason::kCompleted;
  while (true) {
    why = trainer.Run(listener);
    if (!why.ok()) break;
    if (listener.checkpoint_due() || why.value() != train::StopReason::kRequested ||
        listener.stop_requested()) {
      Status saved = save();
      if (!saved.ok()) return finish(JobState::kFailed, "checkpoint failed: " + saved.message());
    }
    if (why.value() != train::StopReason::kRequested || listener.stop_requested()) break;
  }
  outcome.steps = trainer.position().step;
  if (!why.ok()) return finish(JobState::kFailed, why.status().message());
  if (data.eval.rows > 0) outcome.final_eval = trainer.Evaluate(data.eval);

  switch (why.value()) {
    case train::StopReason::kCompleted:
      return finish(JobState::kSucceeded,
                    "completed " + std::to_string(outcome.steps) + " steps");
    case train::StopReason::kTargetReached:
      return finish(JobState::kSucceeded, "reached target accuracy at step " +
                                              std::to_string(outcome.steps));
    case train::StopReason::kRequested:
      break;
  }
  return finish(JobState::kCancelled, "interrupted at step " + std::to_string(outcome.steps) +
                                          " after a checkpoint; resume with dtrain run --resume " +
                                          std::to_string(job_id));
}

}  // namespace dtrain::runner
