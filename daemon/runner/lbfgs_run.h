// RunLbfgs: a job with [optimizer] type = "lbfgs": L-BFGS on the job's full-batch objective
// (core/train/batch_objective.h), in this process (mode "single": the exact, deterministic
// reference) or on Sandblaster's shards and workers (an LbfgsEngine), recorded like a training
// run:
//   every iteration: train_loss and train_accuracy (at the new point, over the objective's rows),
//     objective (with the L2 term), grad_norm, step_length, evaluations (this iteration's) and
//     samples_per_sec (rows evaluated per second); `step` is the iteration, `epoch` the
//     objective evaluations so far (passes over the rows)
//   eval_loss / eval_accuracy (or eval_mse) every train.eval_every iterations (0: every one) and
//     at the end
//   checkpoints every checkpoint.every_steps iterations or every_seconds, on a stop request and
//     at the end (LbfgsCheckpoint)
// Each evaluation is judged as a training loop's (train::JudgeEvaluation): train.target_accuracy
// and train.early_stopping stop it (an iteration counts as a step), and where the job keeps a
// best model (config::BestModelMetric) an improving evaluation's x becomes it, sent by the
// process that writes checkpoints (this one, or Sandblaster's coordinator, which gathers x from
// the shards to evaluate it). train.batch_size is the rows evaluated at once.
//
//   Result<LbfgsRunResult> r = RunLbfgs(job, data, recorder, options, resume ? &*resume : nullptr);
//
// One thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config/job.h"
#include "core/optim/lbfgs.h"
#include "core/train/strategy.h"
#include "core/train/trainer.h"
#include "daemon/runner/job_data.h"
#include "daemon/runner/lbfgs_engine.h"
#include "daemon/runner/recorded_training.h"
#include "daemon/runner/recorder.h"
#include "daemon/store/checkpoint.h"

namespace dtrain::runner {

struct LbfgsRunResult {
  train::StopReason why = train::StopReason::kCompleted;
  optim::LbfgsStop stop = optim::LbfgsStop::kNone;  // why L-BFGS ended (completed runs)
  std::int64_t iterations = 0;
  double loss = 0.0;  // the objective at the end
  std::optional<train::EvalResult> final_eval;  // on the held-out set, if there is one
  // train.early_stopping's judgement at the end (why kEarlyStopped: its Describe).
  train::EarlyStopping early_stopping{train::EarlyStoppingOptions{}};
};

// "converged (gradient tolerance) after 37 iterations", "stopped after 100 iterations (max
// iterations)", "stopped early at step 3: best eval_loss ...": for the job's final state.
std::string DescribeLbfgsEnd(const LbfgsRunResult& result);

// In this process (LocalLbfgsEngine).
Result<LbfgsRunResult> RunLbfgs(const config::JobConfig& job, const JobData& data,
                                RunRecorder& recorder, const RunOptions& options,
                                const store::CheckpointData* resume);
// On `engine` (Sandblaster's coordinator passes its own); `model` is data.spec's.
Result<LbfgsRunResult> RunLbfgs(const config::JobConfig& job, const JobData& data,
                                const model::Model& model, LbfgsEngine& engine,
                                RunRecorder& recorder, const RunOptions& options,
                                const store::CheckpointData* resume);

}  // namespace dtrain::runner
