#include "daemon/runner/local_run.h"

#include <chrono>
#include <memory>

#include "daemon/runner/memory_limit.h"
#include "daemon/runner/trainer_checkpoint.h"
#include "daemon/runner/training_session.h"

namespace dtrain::runner {
namespace {

using Clock = std::chrono::steady_clock;
using store::JobState;

constexpr int kWorker = 0;  // `dtrain run` is a single replica

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
  // This process is the job's: its memory_limit applies to it, BLAS buffers first (memory_limit.h).
  const char* doing = "preparing its BLAS threads";
  try {
    if (Status limited = LimitAddressSpace(job.memory_limit); !limited.ok()) {
      return finish(JobState::kFailed, limited.message());
    }
    if (Result<int> blas = PrepareBlas(job, {}); !blas.ok()) {
      return finish(JobState::kFailed, blas.status().message());
    }
    doing = "reading the job's data";
    auto loaded = LoadJobData(job);
    if (!loaded.ok()) return finish(JobState::kFailed, loaded.status().message());
    const JobData& data = loaded.value();
    outcome.eval_name = data.eval_name;
    outcome.classification = data.spec.loss != model::LossType::kMeanSquaredError;

    doing = "building the model, its gradient and optimizer state";
    auto made = TrainingSession::Make(job, data);
    if (!made.ok()) return finish(JobState::kFailed, made.status().message());
    std::unique_ptr<TrainingSession> session = std::move(made).value();
    train::Trainer& trainer = session->trainer();

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
                      std::to_string(session->network().NumParams()) + " parameters");
    if (!running.ok()) return running;
    if (options.observer != nullptr) options.observer->OnStart(trainer, data, resumed);

    doing = "training";
    StoreRecorder recorder(store, job_id, kWorker, job.checkpoint.keep);
    const Result<train::StopReason> why =
        TrainRecorded(trainer, job.checkpoint, recorder, options,
                      resumed ? outcome.resumed_from : -1);
    outcome.steps = trainer.position().step;
    if (!why.ok()) return finish(JobState::kFailed, why.status().message());
    if (data.eval.rows > 0) {
      Result<train::EvalResult> final_eval = trainer.Evaluate(data.eval);
      if (!final_eval.ok()) return finish(JobState::kFailed, final_eval.status().message());
      outcome.final_eval = final_eval.value();
    }

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
  } catch (const std::bad_alloc&) {
    return finish(JobState::kFailed, OutOfMemory(doing, job));
  }
}

}  // namespace dtrain::runner
