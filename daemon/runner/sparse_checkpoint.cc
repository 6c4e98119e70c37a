#include "daemon/runner/sparse_checkpoint.h"

#include <bit>
#include <string>
#include <utility>

namespace dtrain::runner {

store::CheckpointData SparseCheckpoint(sparse::KeyTableState state,
                                       const sparse::SparseModelSpec& spec,
                                       const train::TrainPosition& position, std::uint64_t seed,
                                       const train::EarlyStoppingState& early_stopping) {
  store::CheckpointData c;
  c.step = position.step;
  c.epoch = position.epoch;
  c.batch = position.batch;
  c.seed = seed;
  c.model_spec = sparse::FormatSparseModelSpec(spec);
  c.optimizer_steps = static_cast<std::uint64_t>(position.step);
  c.early_stopping = early_stopping;
  c.params.reserve(state.slots.size() + state.globals.size());
  c.params.assign(state.slots.begin(), state.slots.end());
  c.params.insert(c.params.end(), state.globals.begin(), state.globals.end());
  for (std::vector<float>& v : state.state) c.optimizer_state.emplace_back(v.begin(), v.end());
  math::FloatBuffer& keys = c.optimizer_state.emplace_back(state.keys.size());
  for (std::size_t i = 0; i < state.keys.size(); ++i) keys[i] = std::bit_cast<float>(state.keys[i]);
  return c;
}

Result<sparse::KeyTableState> SparseStateOf(const store::CheckpointData& c,
                                            const sparse::SparseModelSpec& spec,
                                            std::size_t state_vectors) {
  const std::string expected = sparse::FormatSparseModelSpec(spec);
  if (c.model_spec != expected) {
    return Status::Error("the checkpoint is of model \"" + c.model_spec + "\", this job trains \"" +
                         expected + "\"");
  }
  if (c.optimizer_state.size() != state_vectors + 1) {
    return Status::Error("the checkpoint holds " + std::to_string(c.optimizer_state.size()) +
                         " vectors beside the parameters; this model and optimizer keep " +
                         std::to_string(state_vectors + 1));
  }
  const sparse::SparseModel model(spec);
  const math::FloatBuffer& keys = c.optimizer_state.back();
  const std::size_t slots = keys.size() * model.SlotWidth();
  if (c.params.size() != slots + model.GlobalWidth()) {
    return Status::Error("the checkpoint's " + std::to_string(c.params.size()) +
                         " parameters do not fit its " + std::to_string(keys.size()) + " keys");
  }
  sparse::KeyTableState state;
  state.keys.resize(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i)
    state.keys[i] = std::bit_cast<std::uint32_t>(keys[i]);
  state.slots.assign(c.params.begin(), c.params.begin() + static_cast<std::ptrdiff_t>(slots));
  state.globals.assign(c.params.begin() + static_cast<std::ptrdiff_t>(slots), c.params.end());
  for (std::size_t v = 0; v < state_vectors; ++v) {
    state.state.emplace_back(c.optimizer_state[v].begin(), c.optimizer_state[v].end());
  }
  return state;
}

Result<train::TrainPosition> RestoreSparseCheckpoint(const store::CheckpointData& c,
                                                     const sparse::SparseModelSpec& spec,
                                                     std::uint64_t seed, sparse::KeyTable& table) {
  if (c.seed != seed) {
    return Status::Error("the checkpoint was taken with seed " + std::to_string(c.seed) +
                         ", this job has seed " + std::to_string(seed));
  }
  Result<sparse::KeyTableState> state = SparseStateOf(c, spec, table.StateVectors());
  if (!state.ok()) return state.status();
  if (Status restored = table.Restore(std::move(state).value()); !restored.ok()) return restored;
  return train::TrainPosition{c.step, c.epoch, static_cast<std::size_t>(c.batch)};
}

}  // namespace dtrain::runner
