// RunSparse: a sparse job (data.sparse = true) trained in this process — a SparseTrainer over a
// KeyTable (core/sparse), or one replica of an async job over parameter-server shards
// (RunSparseOn) — and recorded like any run: metrics (sparse_trainer.h's names),
// checkpoints of the touched keys (sparse_checkpoint.h) by the job's policy, on a stop request
// and at the end, and the final evaluation on the held-out rows. At its end replica 0 records
// train::kNonzeroWeights and, when the model is all zeros, tells its observer a warning (for
// FTRL naming optimizer.l1, whose L1 zeroes weights).
//
//   Result<SparseJobData> data = LoadSparseJobData(job);
//   Result<SparseRunResult> r = RunSparse(job, data.value(), recorder, options, resume);
//
// One thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "config/job.h"
#include "core/sparse/sparse_trainer.h"
#include "core/train/strategy.h"
#include "daemon/runner/recorded_training.h"
#include "daemon/runner/recorder.h"
#include "daemon/runner/sparse_data.h"
#include "daemon/store/checkpoint.h"

namespace dtrain::runner {

struct SparseRunResult {
  train::StopReason why = train::StopReason::kCompleted;
  std::int64_t steps = 0;
  std::uint64_t keys = 0;                              // keys the model holds at the end
  std::optional<sparse::SparseEvalResult> final_eval;  // on the held-out rows, if any
  // train.early_stopping's judgement at the end (why kEarlyStopped: its Describe).
  train::EarlyStopping early_stopping{train::EarlyStoppingOptions{}};
};

// The first line observers print for a sparse run.
RunSubject SubjectOf(const SparseJobData& data);

// The engine's options for a sparse job: the job's [train] keys (config::TrainOptionsOf) with the
// rate as the workers use it.
train::TrainOptions SparseTrainOptions(const config::JobConfig& job);

// In this process (mode "single"): a KeyTable, restored from `resume` if given.
Result<SparseRunResult> RunSparse(const config::JobConfig& job, const SparseJobData& data,
                                  RunRecorder& recorder, const RunOptions& options,
                                  const store::CheckpointData* resume);

// Where a run's sparse model lives: its parameters, and how to take its whole state (for a
// checkpoint).
struct SparsePlace {
  sparse::SparseParameters& params;
  std::function<Result<sparse::KeyTableState>()> snapshot;
};
// Replica `replica` of cluster.workers (its share of the rows) training the model that lives at
// `place` (parameter-server shards: async or sync mode), from `resume`'s position and
// early-stopping state if given (the parameters are where they live already). Where this process
// writes checkpoints (options.checkpoints), an evaluation that improves on the best so far makes
// the place's whole model the job's best model (RunRecording::KeepBest).
Result<SparseRunResult> RunSparseOn(const config::JobConfig& job, const SparseJobData& data,
                                    const SparsePlace& place, int replica, RunRecorder& recorder,
                                    const RunOptions& options, const store::CheckpointData* resume);

}  // namespace dtrain::runner
