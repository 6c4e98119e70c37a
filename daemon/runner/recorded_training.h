// TrainRecorded: runs a Trainer to its end while recording it — every metric to a RunRecorder
// (and an observer), checkpoints by the job's policy (every_steps / every_seconds), on a stop
// request, and at the end. The part of the job runner that sits on the training hot path,
// kept apart so bench/ can measure its cost against a bare Trainer::Run.
//
//   StoreRecorder recorder(store, id, 0, job.checkpoint.keep);
//   Result<train::StopReason> why = TrainRecorded(trainer, job.checkpoint, recorder, options, -1);
//
// One thread at a time (the training thread).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>

#include "config/job.h"
#include "core/train/trainer.h"
#include "daemon/runner/job_data.h"
#include "daemon/runner/recorder.h"

namespace dtrain::runner {

// Where a run stands, for observers: a training loop's position, or an L-BFGS run's
// (daemon/runner/lbfgs_run.h), whose steps are iterations and epochs passes over its rows.
struct RunProgress {
  std::int64_t step = 0;            // steps (iterations) completed
  std::int64_t planned_steps = 0;   // the most the run takes
  std::uint64_t epoch = 0;          // the current epoch (0-based)
  double epochs = 0.0;              // fractional epochs completed
  std::int64_t planned_epochs = 0;  // 0: no epoch limit
  std::size_t params = 0;   // a sparse model's: those made so far (as the rows touch keys)
  std::uint64_t feature_keys = 0;  // a sparse model: the keys its features may take (0: dense)
  std::size_t params_per_key = 0;  // a sparse model: the parameters made for each key touched
  bool iterations = false;  // an L-BFGS run
  int batch_slices = 1;     // threads a step's batch is split over (1: BLAS threads, if any)
  std::size_t rows_per_epoch = 0;  // sync modes: the training rows an epoch takes (else 0)
};
RunProgress ProgressOf(const train::Trainer& trainer);

// What a run trains, for its observers' first line.
struct RunSubject {
  std::size_t train_rows = 0;
  std::string model;      // the model in a few words (model::SummarizeModel)
  std::string eval_name;  // "test", "validation" or "" (none)
  std::string optimizer;  // its settings when it takes no learning rate ("ftrl alpha=0.05 ...")
};
RunSubject SubjectOf(const JobData& data);
// RunSubject::optimizer of `job`: FTRL's settings ("ftrl alpha=0.05 beta=1 l1=0.1 l2=0"), which
// take the place of a learning rate; "" for the other optimizers.
std::string OptimizerSettings(const config::JobConfig& job);

// Told what happens, on the training thread (for progress bars and plain-text logs).
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void OnStart(const RunProgress& progress, const RunSubject& subject, bool resumed) = 0;
  virtual void OnMetrics(const RunProgress& progress,
                         std::span<const train::MetricPoint> points) = 0;
  virtual void OnCheckpoint(const RunProgress& progress) = 0;
  // Something the log should say ("worker rank 2 is lost: ...; its units go to the others").
  virtual void OnEvent(const std::string& line) { (void)line; }
};

struct RunOptions {
  const std::atomic<bool>* stop = nullptr;  // set it (e.g. from SIGINT) to stop after a checkpoint
  RunObserver* observer = nullptr;
  // False on the replicas of a job that do not write its checkpoints (all but rank 0).
  bool checkpoints = true;
  // How a checkpoint is captured when the state is not all in the trainer (parameter servers);
  // unset: it is encoded straight from the trainer's buffers (ViewCheckpoint).
  std::function<Result<store::CheckpointData>(train::Trainer&)> capture;
  // Called on the training thread after every step, before its checkpoint (an elastic replica
  // looks for a regroup notice there); unset: nothing.
  std::function<void()> after_step;
  // Whether the state after `step` steps may be checkpointed (an elastic local job: only right
  // after a parameter average, where every member holds it); a checkpoint due by the policy at
  // another step is written at the next step that may be. Unset: any step. The run's last
  // checkpoint (at its end, or where it stopped) is written wherever that is.
  std::function<bool(std::int64_t)> checkpoint_at;
  // `dtrain run`: the command that goes on with a run stopped on request, named in its reason
  // ("dtrain run --resume 3 --db runs.db"); empty: "dtrain run --resume JOB".
  std::string resume_command;
};

// The recording of a run, whatever its loop: metrics to the recorder and the observer,
// checkpoints by the job's policy between steps (the loop is idle then), and the stop request.
// As it is made it records train::kPlannedSteps (the run's planned steps, at its first step).
// `progress` says where the run stands; `write_checkpoint` saves the run's state to the recorder
// now. Used by TrainRecorded, and by loops of their own (sparse models).
class RunRecording {
 public:
  // `together`: the strategy of replicas that checkpoint together (train::Strategy::
  // CollectiveCheckpoints), null otherwise. They save at the same steps: every_steps, and where
  // the writer's every_seconds proposed a checkpoint and the replicas agreed; each calls
  // `write_checkpoint` then (the writer's writes, the others' hand over their part).
  // `backups`: those replicas' steps may go on without the slowest (backup workers); each then
  // proposes a checkpoint on the step before an every_steps one too, so that step takes every
  // replica's gradient and the checkpoint owes no rows.
  RunRecording(const config::CheckpointConfig& policy, RunRecorder& recorder,
               const RunOptions& options, std::int64_t last_saved_step,
               std::function<RunProgress()> progress, std::function<Status()> write_checkpoint,
               train::Strategy* together = nullptr, bool backups = false);

  void Record(std::span<const train::MetricPoint> points);
  // After a step: a checkpoint when due. False: stop now (asked to, or a checkpoint failed).
  bool AfterStep();
  // A checkpoint now, unless this step's is written already (or this process writes none).
  Status Save();
  // An evaluation improved on the best so far: `model` becomes the job's best model, where this
  // process writes checkpoints (the others hold the same model). A failure stops the run as a
  // failed checkpoint does.
  void KeepBest(const store::BestModelInfo& best, const store::CheckpointView& model);
  // As above, the model taken by `take` (only where this process writes checkpoints), for loops
  // whose model is not all in this process (a sparse model's shards).
  void KeepBest(const store::BestModelInfo& best,
                const std::function<Result<store::CheckpointData>()>& take);
  // At the end, whatever stopped the loop: the last checkpoint and the peak memory metric
  // (peak_rss_bytes). The first failed checkpoint's error, if one failed.
  Status Finish();

 private:
  const config::CheckpointConfig& policy_;
  RunRecorder& recorder_;
  const RunOptions& options_;
  std::int64_t last_saved_step_;
  std::function<RunProgress()> progress_;
  std::function<Status()> write_checkpoint_;
  train::Strategy* together_;
  bool backups_;
  std::chrono::steady_clock::time_point last_checkpoint_ = std::chrono::steady_clock::now();
  bool held_ = false;  // a checkpoint fell due at a step RunOptions::checkpoint_at refused
  Status failure_;
};

// Checkpoints are taken between steps, inside the loop, so the replicas of a collective job keep
// stepping together. `last_saved_step` is the step of the checkpoint the trainer was restored from
// (-1 if none): it is not written again. An error names what failed (a strategy step, or
// "checkpoint failed:
// ...").
Result<train::StopReason> TrainRecorded(train::Trainer& trainer,
                                        const config::CheckpointConfig& policy,
                                        RunRecorder& recorder, const RunOptions& options,
                                        std::int64_t last_saved_step);

}  // namespace dtrain::runner
