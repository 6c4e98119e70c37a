#include "daemon/runner/trainer_checkpoint.h"

#include <algorithm>
#include <string>

namespace dtrain::runner {

store::CheckpointView ViewModel(const train::Trainer& trainer) {
  store::CheckpointView c;
  const train::TrainPosition& pos = trainer.position();
  c.step = pos.step;
  c.epoch = pos.epoch;
  c.batch = pos.batch;
  c.seed = trainer.options().seed;
  c.model_spec = model::FormatModelSpec(trainer.network().spec());
  c.params = trainer.params();
  c.early_stopping = trainer.early_stopping().state();
  return c;
}

store::CheckpointView ViewCheckpoint(train::Trainer& trainer,
                                     std::span<const std::vector<float>> strategy_state) {
  store::CheckpointView c = ViewModel(trainer);
  if (optim::Optimizer* opt = trainer.strategy().LocalOptimizer()) {
    c.optimizer_steps = opt->steps();
    for (std::span<float> v : opt->StateVectors()) c.optimizer_state.emplace_back(v);
  }
  for (const std::vector<float>& v : strategy_state) c.optimizer_state.emplace_back(v);
  return c;
}

Status CheckNothingOwed(const train::Trainer& trainer) {
  if (trainer.owed().empty()) return Status::Ok();
  return Status::Error("internal error: the checkpoint at step " +
                       std::to_string(trainer.position().step) + " would leave " +
                       std::to_string(trainer.owed().size()) +
                       " rows owed to the next step, which it cannot hold");
}

Status RestoreCheckpoint(const store::CheckpointData& c, train::Trainer& trainer) {
  const std::string spec = model::FormatModelSpec(trainer.network().spec());
  if (c.model_spec != spec) {
    return Status::Error("checkpoint at step " + std::to_string(c.step) + " is of model '" +
                         c.model_spec + "', not the job's '" + spec + "'");
  }
  if (c.seed != trainer.options().seed) {
    return Status::Error("checkpoint at step " + std::to_string(c.step) + " was taken with seed " +
                         std::to_string(c.seed) + ", the job has seed " +
                         std::to_string(trainer.options().seed));
  }
  if (c.params.size() != trainer.params().size()) {
    return Status::Error("checkpoint at step " + std::to_string(c.step) + " holds " +
                         std::to_string(c.params.size()) + " parameters, the model has " +
                         std::to_string(trainer.params().size()));
  }
  // Without a local optimizer (parameter servers) the shards restore the optimizer state.
  optim::Optimizer* opt = trainer.strategy().LocalOptimizer();
  std::vector<std::span<float>> state;
  if (opt != nullptr) state = opt->StateVectors();
  // After the optimizer's vectors, those of a strategy that checkpoints state of its own.
  const bool strategy_state = trainer.strategy().CollectiveCheckpoints();
  if (opt != nullptr && (strategy_state ? c.optimizer_state.size() < state.size()
                                        : c.optimizer_state.size() != state.size())) {
    return Status::Error("checkpoint at step " + std::to_string(c.step) + " holds " +
                         std::to_string(c.optimizer_state.size()) +
                         " optimizer state vectors, the job's optimizer has " +
                         std::to_string(state.size()));
  }
  for (std::size_t i = 0; i < state.size(); ++i) {
    if (state[i].size() != c.optimizer_state[i].size()) {
      return Status::Error("checkpoint at step " + std::to_string(c.step) +
                           ": optimizer state vector " + std::to_string(i) + " has the wrong size");
    }
  }
  if (strategy_state) {
    std::vector<std::span<const float>> own;
    for (std::size_t i = state.size(); i < c.optimizer_state.size(); ++i) {
      own.emplace_back(c.optimizer_state[i]);
    }
    if (Status taken = trainer.strategy().RestoreState(own); !taken.ok()) {
      return Status::Error("checkpoint at step " + std::to_string(c.step) + ": " + taken.message());
    }
  }
  std::copy(c.params.begin(), c.params.end(), trainer.params().begin());
  for (std::size_t i = 0; i < state.size(); ++i) {
    std::copy(c.optimizer_state[i].begin(), c.optimizer_state[i].end(), state[i].begin());
  }
  if (opt != nullptr) opt->set_steps(c.optimizer_steps);
  trainer.set_position({c.step, c.epoch, static_cast<std::size_t>(c.batch)});
  trainer.early_stopping().Restore(c.early_stopping);
  return Status::Ok();
}

Status RestoreOrInit(const store::CheckpointData* resume, train::Trainer& trainer) {
  if (resume != nullptr) return RestoreCheckpoint(*resume, trainer);
  trainer.InitParams();
  return Status::Ok();
}

}  // namespace dtrain::runner
