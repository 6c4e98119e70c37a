// A sparse model's state as a checkpoint and back (daemon/store/checkpoint_format.md): the
// checkpoint's parameter vector is the touched keys' slots in the table's row order followed by
// the globals; its state vectors are the optimizer's (KeyTableState::state, each over the same
// rows then the globals), then one vector of the keys, each key's u32 bit pattern in one float.
// The model spec is sparse::FormatSparseModelSpec's; step = optimizer_steps. A checkpoint's size
// is proportional to the keys touched, never to the feature space.
//
// With them train.early_stopping's state (the rule's judgement so far).
//
//   store::CheckpointData c = SparseCheckpoint(table.Snapshot(), spec, trainer.position(), seed,
//                                              trainer.early_stopping().state());
//   Result<TrainPosition> at = RestoreSparseCheckpoint(c, spec, seed, table);
//
// Pure functions of their arguments (Restore changes only `table`).
#pragma once

#include <cstdint>

#include "core/sparse/key_table.h"
#include "core/sparse/sparse_model.h"
#include "core/status.h"
#include "core/train/trainer.h"
#include "daemon/store/checkpoint.h"

namespace dtrain::runner {

store::CheckpointData SparseCheckpoint(sparse::KeyTableState state,
                                       const sparse::SparseModelSpec& spec,
                                       const train::TrainPosition& position, std::uint64_t seed,
                                       const train::EarlyStoppingState& early_stopping);

// The table's state from `state`'s parts of a checkpoint: checks the model and the sizes.
Result<sparse::KeyTableState> SparseStateOf(const store::CheckpointData& checkpoint,
                                            const sparse::SparseModelSpec& spec,
                                            std::size_t state_vectors);

// Checks the model, seed and sizes, then restores `table` and returns the data position.
Result<train::TrainPosition> RestoreSparseCheckpoint(const store::CheckpointData& checkpoint,
                                                     const sparse::SparseModelSpec& spec,
                                                     std::uint64_t seed, sparse::KeyTable& table);

}  // namespace dtrain::runner
