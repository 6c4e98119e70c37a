// A Trainer's state as a checkpoint and back: parameters, optimizer state and step count, the
// data position (step, epoch, batch) with the seed that fixes the order, and train.early_stopping's
// state. The state of the
// trainer's strategy's own (train::Strategy::CheckpointState: a compressed sync job's residuals
// and factors) follows the optimizer's state vectors.
//
//   std::string blob = store::EncodeCheckpoint(ViewCheckpoint(trainer));  // copies nothing first
//   Status s = RestoreCheckpoint(c, trainer);  // refuses a checkpoint of another model
//   Status s = RestoreOrInit(resume ? &*resume : nullptr, trainer);  // a run's start
//
// One thread at a time (the trainer's).
#pragma once

#include <span>
#include <vector>

#include "core/status.h"
#include "core/train/trainer.h"
#include "daemon/store/checkpoint.h"

namespace dtrain::runner {

// The trainer's model alone: its place, seed, early-stopping state and parameters (batch norm
// statistics included), without optimizer state (a job's best model). Valid until it steps again.
store::CheckpointView ViewModel(const train::Trainer& trainer);
// Views of the trainer's own buffers and of `strategy_state`: valid until it steps again.
store::CheckpointView ViewCheckpoint(train::Trainer& trainer,
                                     std::span<const std::vector<float>> strategy_state = {});

// A checkpoint is the trainer's place (step, epoch, batch) and nothing more: no rows may be owed
// to the next step (with backup workers, the step before a checkpoint takes every gradient). An
// internal error naming the step and the rows owed otherwise.
Status CheckNothingOwed(const train::Trainer& trainer);

// Checks the model spec, seed and every vector's size before touching the trainer. A trainer
// whose strategy has no local optimizer (parameter servers) takes the parameters and position
// only; a strategy with checkpoint state of its own takes the vectors after the optimizer's.
Status RestoreCheckpoint(const store::CheckpointData& checkpoint, train::Trainer& trainer);
// Where a run starts: the checkpoint to resume from (RestoreCheckpoint), or, without one (null),
// the model's fresh parameters (Trainer::InitParams).
Status RestoreOrInit(const store::CheckpointData* resume, train::Trainer& trainer);

}  // namespace dtrain::runner
