#include "daemon/runner/lbfgs_checkpoint.h"

#include <algorithm>
#include <cstdint>

#include "core/dist/float_slots.h"

namespace dtrain::runner {
namespace {

}  // namespace

std::vector<int> SavedVectors(int history) {
  std::vector<int> saved{optim::kG};
  for (int slot = 0; slot < history; ++slot) {
    saved.push_back(optim::HistoryS(slot));
    saved.push_back(optim::HistoryY(slot));
  }
  return saved;
}

namespace {

std::string At(const store::CheckpointData& c) {
  return "checkpoint at iteration " + std::to_string(c.step);
}

}  // namespace

std::vector<float> EncodeLbfgsState(const optim::LbfgsState& state) {
  std::vector<float> scalars(kLbfgsScalarFloats);
  dist::PutU64(scalars, 0, static_cast<std::uint64_t>(state.iteration));
  dist::PutU64(scalars, 2, static_cast<std::uint64_t>(state.evaluations));
  dist::PutF64(scalars, 4, state.loss);
  dist::PutU32(scalars, 6, static_cast<std::uint32_t>(state.pairs));
  dist::PutU32(scalars, 7, static_cast<std::uint32_t>(state.newest + 1));
  return scalars;
}

Result<optim::LbfgsState> DecodeLbfgsState(std::span<const float> scalars) {
  if (scalars.size() != kLbfgsScalarFloats) {
    return Status::Error("its L-BFGS state has " + std::to_string(scalars.size()) +
                         " values, not " + std::to_string(kLbfgsScalarFloats));
  }
  optim::LbfgsState state;
  state.iteration = static_cast<std::int64_t>(dist::GetU64(scalars, 0));
  state.evaluations = static_cast<std::int64_t>(dist::GetU64(scalars, 2));
  state.loss = dist::GetF64(scalars, 4);
  state.pairs = static_cast<int>(dist::GetU32(scalars, 6));
  state.newest = static_cast<int>(dist::GetU32(scalars, 7)) - 1;
  return state;
}

store::CheckpointView ViewLbfgsCheckpoint(const optim::VectorSlices& vectors, int history,
                                          const optim::LbfgsState& state, std::uint64_t seed,
                                          const std::string& model_spec,
                                          std::vector<float>* scalars) {
  *scalars = EncodeLbfgsState(state);
  store::CheckpointView c;
  c.step = state.iteration;
  c.epoch = static_cast<std::uint64_t>(state.evaluations);
  c.seed = seed;
  c.model_spec = model_spec;
  c.optimizer_steps = static_cast<std::uint64_t>(state.iteration);
  c.params = vectors[optim::kX];
  for (int v : SavedVectors(history)) c.optimizer_state.emplace_back(vectors[v]);
  c.optimizer_state.emplace_back(*scalars);
  return c;
}

Status RestoreLbfgsCheckpoint(const store::CheckpointData& c, int history, std::uint64_t seed,
                              const std::string& model_spec, optim::VectorSlices& vectors,
                              optim::LbfgsState* state) {
  if (c.model_spec != model_spec) {
    return Status::Error(At(c) + " is of model '" + c.model_spec + "', not the job's '" +
                         model_spec + "'");
  }
  if (c.seed != seed) {
    return Status::Error(At(c) + " was taken with seed " + std::to_string(c.seed) +
                         ", the job has seed " + std::to_string(seed));
  }
  const std::vector<int> saved = SavedVectors(history);
  if (c.optimizer_state.size() != saved.size() + 1) {
    return Status::Error(At(c) + " does not hold an L-BFGS history of " +
                         std::to_string(history) + " pairs (optimizer.history)");
  }
  if (c.params.size() != vectors.length()) {
    return Status::Error(At(c) + " holds " + std::to_string(c.params.size()) +
                         " parameters, the model has " + std::to_string(vectors.length()));
  }
  for (std::size_t i = 0; i < saved.size(); ++i) {
    if (c.optimizer_state[i].size() != vectors.length()) {
      return Status::Error(At(c) + ": L-BFGS vector " + std::to_string(i) +
                           " has the wrong size");
    }
  }
  Result<optim::LbfgsState> decoded = DecodeLbfgsState(c.optimizer_state.back());
  if (!decoded.ok()) return Status::Error(At(c) + ": " + decoded.status().message());
  std::copy(c.params.begin(), c.params.end(), vectors[optim::kX].begin());
  for (std::size_t i = 0; i < saved.size(); ++i) {
    std::copy(c.optimizer_state[i].begin(), c.optimizer_state[i].end(),
              vectors[saved[i]].begin());
  }
  *state = decoded.value();
  return Status::Ok();
}

}  // namespace dtrain::runner
