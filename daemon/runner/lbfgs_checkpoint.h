// L-BFGS's state as a checkpoint and back. The checkpoint's parameter vector is x; its state
// vectors are the gradient at x, then the history pairs s_0, y_0, ..., s_{m-1}, y_{m-1} (slot
// order, unused slots zero), then a small vector of the scalars (LbfgsState: iteration,
// evaluations and the loss as u64 bit patterns in two floats each, low word first, then pairs
// and newest + 1 as u32 bit patterns). step = optimizer_steps = iterations; epoch = evaluations.
// See daemon/store/checkpoint_format.md.
//
//   store::CheckpointView view = ViewLbfgsCheckpoint(vectors, lbfgs.state(), m, seed, spec, &scalars);
//   Status s = RestoreLbfgsCheckpoint(c, m, seed, spec, vectors, &state);
//
// Pure functions of their arguments.
#pragma once

#include <string>
#include <vector>

#include "core/optim/lbfgs.h"
#include "core/optim/vector_slices.h"
#include "core/status.h"
#include "daemon/store/checkpoint.h"

namespace dtrain::runner {

inline constexpr std::size_t kLbfgsScalarFloats = 8;

// The vectors a checkpoint keeps beside x, in its order: g, then s_i and y_i slot by slot.
std::vector<int> SavedVectors(int history);

std::vector<float> EncodeLbfgsState(const optim::LbfgsState& state);
Result<optim::LbfgsState> DecodeLbfgsState(std::span<const float> scalars);

// A view of the vectors (valid while they are unchanged); `scalars` holds the encoded state and
// must outlive the view.
store::CheckpointView ViewLbfgsCheckpoint(const optim::VectorSlices& vectors, int history,
                                          const optim::LbfgsState& state, std::uint64_t seed,
                                          const std::string& model_spec,
                                          std::vector<float>* scalars);

// Checks the model, seed, history and sizes before writing x, g and the history into `vectors`.
Status RestoreLbfgsCheckpoint(const store::CheckpointData& c, int history, std::uint64_t seed,
                              const std::string& model_spec, optim::VectorSlices& vectors,
                              optim::LbfgsState* state);

}  // namespace dtrain::runner
