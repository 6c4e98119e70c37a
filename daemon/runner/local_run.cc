#include "daemon/runner/local_run.h"

#include <chrono>
#include <memory>

#include "config/mode_traits.h"
#include "daemon/runner/final_class_report.h"
#include "daemon/runner/job_precision.h"
#include "daemon/runner/lbfgs_run.h"
#include "daemon/runner/memory_limit.h"
#include "daemon/runner/sparse_run.h"
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

// Why a job stopped on request, and how to go on with it.
std::string Interrupted(const char* unit, std::int64_t at, std::int64_t job_id,
                        const RunOptions& options) {
  const std::string command = options.resume_command.empty()
                                  ? "dtrain run --resume " + std::to_string(job_id)
                                  : options.resume_command;
  return "interrupted at " + std::string(unit) + " " + std::to_string(at) +
         " after a checkpoint; resume with " + command;
}

// The job's final reason after a training loop stopped for `why` at `steps`; `early` judged its
// evaluations.
std::string DescribeEnd(train::StopReason why, std::int64_t steps, std::int64_t job_id,
                        const RunOptions& options, const train::EarlyStopping& early) {
  switch (why) {
    case train::StopReason::kCompleted:
      return "completed " + std::to_string(steps) + " steps";
    case train::StopReason::kTargetReached:
      return "reached target accuracy at step " + std::to_string(steps);
    case train::StopReason::kEarlyStopped:
      return early.Describe(steps);
    case train::StopReason::kRequested:
      break;
  }
  return Interrupted("step", steps, job_id, options);
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
    const Result<std::string> precision = UsePrecision(job);
    if (!precision.ok()) return finish(JobState::kFailed, precision.status().message());
    if (!precision.value().empty()) store.AppendLog(job_id, kWorker, "runner", precision.value());
    auto latest = store.LatestCheckpoint(job_id);
    if (!latest.ok()) return latest.status();
    for (const std::string& skipped : latest.value().skipped) {
      store.AppendLog(job_id, kWorker, "runner", "skipped damaged checkpoint: " + skipped);
    }
    const std::optional<store::CheckpointData>& resume = latest.value().checkpoint;
    StoreRecorder recorder(store, job_id, kWorker, job.checkpoint.keep);
    // A job of one process: its replica's engine is kSteps, kSparseSteps or kLbfgs.
    const config::Engine engine = config::EngineOf(job, kWorker);
    if (engine == config::Engine::kSparseSteps) {
      doing = "reading the job's sparse data";
      auto sparse_data = LoadSparseJobData(job);
      if (!sparse_data.ok()) return finish(JobState::kFailed, sparse_data.status().message());
      outcome.eval_name = sparse_data.value().eval_name;
      outcome.resumed_from = resume ? resume->step : -1;
      Status running = store.SetJobState(
          job_id, JobState::kRunning,
          resume
              ? "resumed from the checkpoint at step " + std::to_string(resume->step)
              : "training a sparse model on " + std::to_string(sparse_data.value().TrainRows()) +
                    " rows of " + std::to_string(sparse_data.value().train.features) + " features");
      if (!running.ok()) return running;
      doing = "training a sparse model";
      Result<SparseRunResult> ran =
          RunSparse(job, sparse_data.value(), recorder, options, resume ? &*resume : nullptr);
      if (!ran.ok()) return finish(JobState::kFailed, ran.status().message());
      outcome.steps = ran.value().steps;
      if (const auto& e = ran.value().final_eval) {
        outcome.final_eval = train::EvalResult{e->loss, e->accuracy, e->rows, e->auc};
      }
      return finish(
          ran.value().why == train::StopReason::kRequested ? JobState::kCancelled
                                                           : JobState::kSucceeded,
          DescribeEnd(ran.value().why, outcome.steps, job_id, options, ran.value().early_stopping));
    }
    doing = "reading the job's data";
    auto loaded = LoadJobData(job);
    if (!loaded.ok()) return finish(JobState::kFailed, loaded.status().message());
    const JobData& data = loaded.value();
    outcome.eval_name = data.eval_name;
    outcome.classification = data.spec.loss != model::LossType::kMeanSquaredError;

    if (engine == config::Engine::kLbfgs) {
      doing = "running L-BFGS";
      outcome.resumed_from = resume ? resume->step : -1;
      Status running = store.SetJobState(
          job_id, JobState::kRunning,
          resume ? "resumed from the checkpoint at iteration " + std::to_string(resume->step)
                 : "L-BFGS on " + std::to_string(data.train.rows) + " rows, " +
                       std::to_string(model::Model(data.spec).NumParams()) + " parameters");
      if (!running.ok()) return running;
      Result<LbfgsRunResult> ran =
          RunLbfgs(job, data, recorder, options, resume ? &*resume : nullptr);
      if (!ran.ok()) return finish(JobState::kFailed, ran.status().message());
      outcome.steps = ran.value().iterations;
      outcome.final_eval = ran.value().final_eval;
      if (ran.value().why == train::StopReason::kRequested) {
        return finish(JobState::kCancelled,
                      Interrupted("iteration", outcome.steps, job_id, options));
      }
      return finish(JobState::kSucceeded, DescribeLbfgsEnd(ran.value()));
    }

    doing = "building the model, its gradient and optimizer state";
    auto made = TrainingSession::Make(job, data);
    if (!made.ok()) return finish(JobState::kFailed, made.status().message());
    std::unique_ptr<TrainingSession> session = std::move(made).value();
    train::Trainer& trainer = session->trainer();
    Status restored = RestoreOrInit(resume ? &*resume : nullptr, trainer);
    if (!restored.ok()) return finish(JobState::kFailed, restored.message());
    if (resume) outcome.resumed_from = trainer.position().step;
    const bool resumed = outcome.resumed_from >= 0;
    Status running = store.SetJobState(
        job_id, JobState::kRunning,
        resumed ? "resumed from the checkpoint at step " + std::to_string(outcome.resumed_from)
                : "training " + std::to_string(data.train.rows) + " rows, " +
                      std::to_string(session->network().NumParams()) + " parameters");
    if (!running.ok()) return running;
    if (options.observer != nullptr) {
      RunSubject subject = SubjectOf(data);
      subject.optimizer = OptimizerSettings(job);
      options.observer->OnStart(ProgressOf(trainer), subject, resumed);
    }
    std::vector<std::string> lines = CompressionLines(job, data.spec);
    lines.insert(lines.end(), session->LayerPathLines().begin(), session->LayerPathLines().end());
    for (const std::string& line : lines) {
      store.AppendLog(job_id, kWorker, "runner", line);
      if (options.observer != nullptr) options.observer->OnEvent(line);
    }

    doing = "training";
    const Result<train::StopReason> why = TrainRecorded(trainer, job.checkpoint, recorder, options,
                                                        resumed ? outcome.resumed_from : -1);
    outcome.steps = trainer.position().step;
    if (!why.ok()) return finish(JobState::kFailed, why.status().message());
    if (data.eval.rows > 0) {
      Result<train::EvalResult> final_eval = trainer.Evaluate(data.eval);
      if (!final_eval.ok()) return finish(JobState::kFailed, final_eval.status().message());
      outcome.final_eval = final_eval.value();
      if (why.value() != train::StopReason::kRequested) {
        doing = "making the per-class report";
        if (Status reported = RecordClassReport(data, trainer, recorder); !reported.ok()) {
          store.AppendLog(job_id, kWorker, "runner", "no per-class report: " + reported.message());
        }
      }
    }

    return finish(
        why.value() == train::StopReason::kRequested ? JobState::kCancelled : JobState::kSucceeded,
        DescribeEnd(why.value(), outcome.steps, job_id, options, trainer.early_stopping()));
  } catch (const std::bad_alloc&) {
    return finish(JobState::kFailed, OutOfMemory(doing, job));
  }
}

}  // namespace dtrain::runner
