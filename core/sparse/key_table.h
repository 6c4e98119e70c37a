// KeyTable: the touched parameters of a sparse model — a slot of SparseModel::SlotWidth() floats
// per key, made on first touch (SparseModel::InitSlot), with the optimizer's state beside it —
// and the model's globals. What one process training a sparse model alone holds, and what a
// sparse parameter-server shard will hold for its key range: memory grows with the keys touched,
// never with the feature space.
//
//   KeyTable table(model, {.type = OptimizerType::kFtrl, .l1 = 1.0f}, seed);
//   table.Pull(batch.keys, slots.data());            // creates the keys it has not seen
//   model.ForwardBackward(batch, slots.data(), table.globals(), grad_slots, grad_globals);
//   table.Push(batch.keys, grad_slots, grad_globals, lr);
//
// Optimizers: the lazy ones, whose update of a coordinate with gradient 0 is no update — sgd,
// adagrad and ftrl (per coordinate as the dense Optimizer, so a table trains as the dense model
// does where that starts at 0). One thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/optim/ftrl.h"
#include "core/optim/optimizer.h"
#include "core/sparse/key_index.h"
#include "core/sparse/sparse_model.h"
#include "core/status.h"

namespace dtrain::sparse {

// OK for sgd, adagrad and ftrl; otherwise says why the type cannot train a sparse model.
Status CheckSparseOptimizer(const optim::OptimizerOptions& options);

// A KeyTable's whole state, as a checkpoint keeps it: the keys in the order they were made, their
// slots [keys x SlotWidth()] in that order, each optimizer state vector (none for sgd, the
// accumulator for adagrad, z then n for ftrl) over the same rows followed by the globals'
// coordinates, and the globals.
struct KeyTableState {
  std::vector<std::uint32_t> keys;
  std::vector<float> slots;
  std::vector<std::vector<float>> state;
  std::vector<float> globals;
};

class KeyTable {
 public:
  // `options` must pass CheckSparseOptimizer and ValidateOptimizerOptions.
  KeyTable(const SparseModel& model, const optim::OptimizerOptions& options, std::uint64_t seed);

  // Copies the slots of `keys` into out [keys.size() x SlotWidth()], making the missing ones.
  void Pull(std::span<const std::uint32_t> keys, float* out);
  const float* globals() const { return globals_.data(); }
  // One optimizer step on every coordinate of the keys' slots (grad_slots [keys x SlotWidth()],
  // keys as pulled) and of the globals.
  void Push(std::span<const std::uint32_t> keys, const float* grad_slots, const float* grad_globals,
            float lr);

  std::size_t size() const { return rows_.size(); }  // keys held
  const SparseModel& model() const { return model_; }
  std::size_t Bytes() const;
  // The slot of `key`, or null when it was never touched.
  const float* Find(std::uint32_t key) const;
  // The keys held, in the order they were made (their rows).
  std::span<const std::uint32_t> keys() const { return keys_; }
  std::span<const float> slots() const { return slots_; }

  // State vectors the optimizer keeps: 0 for sgd, 1 for adagrad, 2 for ftrl.
  std::size_t StateVectors() const;
  KeyTableState Snapshot() const;
  // Replaces the table's contents; fails, changing nothing, when the sizes do not fit this model
  // and optimizer or a key repeats.
  Status Restore(KeyTableState state);

 private:
  // Row of `key` in slots_ and states_, made (InitSlot, optimizer state) when missing.
  std::size_t RowOf(std::uint32_t key);
  // One step of the optimizer on n coordinates: p, g, and the state vectors' same coordinates.
  void Step(float* p, const float* g, float* s0, float* s1, std::size_t n, float lr) const;

  const SparseModel& model_;
  optim::OptimizerOptions options_;
  optim::FtrlRates ftrl_;
  std::uint64_t seed_;
  std::size_t width_;
  KeyIndex rows_;
  std::vector<std::uint32_t> keys_;  // by row
  std::vector<float> slots_;         // rows_.size() x width_
  std::vector<float> state0_,
      state1_;  // StateVectors() of them: adagrad's accumulator; ftrl's z, n
  std::vector<float> globals_, global0_, global1_;
};

}  // namespace dtrain::sparse
