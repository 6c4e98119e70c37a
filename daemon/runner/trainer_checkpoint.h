// A Trainer's state as a checkpoint and back: parameters, optimizer state and step count, and the
// data position (step, epoch, batch) with the seed that fixes the order.
//
//   std::string blob = store::EncodeCheckpoint(ViewCheckpoint(trainer));  // copies nothing first
//   Status s = RestoreCheckpoint(c, trainer);  // refuses a checkpoint of another model
//
// One thread at a time (the trainer's).
#pragma once

#include "core/status.h"
#include "core/train/trainer.h"
#include "daemon/store/checkpoint.h"

namespace dtrain::runner {

// Views of the trainer's own buffers: valid until it steps again.
store::CheckpointView ViewCheckpoint(train::Trainer& trainer);

// Checks the model spec, seed and every vector's size before touching the trainer. A trainer
// whose strategy has no local optimizer (parameter servers) takes the parameters and position
// only.
Status RestoreCheckpoint(const store::CheckpointData& checkpoint, train::Trainer& trainer);

}  // namespace dtrain::runner
