// Moving a Trainer's state into and out of a store::CheckpointData: parameters, optimizer state
// and step count, and the data position (step, epoch, batch) with the seed that fixes the order.
//
//   store::CheckpointData c = CaptureCheckpoint(trainer);
//   Status s = RestoreCheckpoint(c, trainer);  // refuses a checkpoint of another model
//
// One thread at a time (the trainer's).
#pragma once

#include "core/status.h"
#include "core/train/trainer.h"
#include "daemon/store/checkpoint.h"

namespace dtrain::runner {

store::CheckpointData CaptureCheckpoint(train::Trainer& trainer);

// Checks the model spec, seed and every vector's size before touching the trainer. A trainer
// whose strategy has no local optimizer (parameter servers) takes the parameters and position
// only.
Status RestoreCheckpoint(const store::CheckpointData& checkpoint, train::Trainer& trainer);

}  // namespace dtrain::runner
