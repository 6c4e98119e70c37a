// SparseModel: the models of sparse, high-dimensional data — logistic regression, softmax
// regression and a factorization machine (Rendle, 2010) — computed on a SparseBatch from the
// parameters of the keys it touches only.
//
//   SparseModel fm({.type = SparseModelType::kFm, .classes = 2, .factors = 8});
//   std::vector<float> slots(batch.keys.size() * fm.SlotWidth()), globals(fm.GlobalWidth());
//   LossValue v = fm.ForwardBackward(batch, slots.data(), globals.data(), grad_slots,
//   grad_globals);
//
// Parameters: each feature owns a slot of SlotWidth() floats, and the model has GlobalWidth()
// more. Logistic: slot [w], globals [b]; softmax over C classes: slot [w_0 .. w_C-1], globals
// [b_0 .. b_C-1] — as the dense model's W row and b, so a dense model's parameters are the slots
// of every feature followed by the globals; FM with k factors: slot [w, v_1 .. v_k], globals
// [w0], and the score w0 + sum_i w_i x_i + sum_{i<j} <v_i, v_j> x_i x_j, computed in O(nnz k) as
// 1/2 sum_f ((sum_i v_if x_i)^2 - sum_i v_if^2 x_i^2). Logistic and FM train with binary
// cross-entropy on 0/1 labels, softmax with softmax cross-entropy. Immutable: safe for
// concurrent use with distinct buffers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/model/loss.h"
#include "core/sparse/sparse_batch.h"
#include "core/status.h"

namespace dtrain::sparse {

enum class SparseModelType { kLogistic, kSoftmax, kFm };

struct SparseModelSpec {
  SparseModelType type = SparseModelType::kLogistic;
  int classes = 2;           // softmax: >= 2; the others: 2
  int factors = 8;           // fm: k >= 1
  float init_scale = 0.01f;  // fm: factors start uniform in [-init_scale, init_scale]

  bool operator==(const SparseModelSpec&) const = default;
};

Status ValidateSparseModelSpec(const SparseModelSpec& spec);

// Job-file names of the types ("logistic", "softmax", "fm") and their list for messages.
std::string_view SparseModelTypeName(SparseModelType type);
Result<SparseModelType> ParseSparseModelType(std::string_view name);
std::string_view SparseModelTypeChoices();

// One line that checkpoints and model files carry, "sparse_fm classes=2 factors=8
// init_scale=0.01"; Parse validates what it reads.
std::string FormatSparseModelSpec(const SparseModelSpec& spec);
Result<SparseModelSpec> ParseSparseModelSpec(std::string_view text);

class SparseModel {
 public:
  explicit SparseModel(SparseModelSpec spec);  // must pass ValidateSparseModelSpec

  const SparseModelSpec& spec() const { return spec_; }
  std::size_t SlotWidth() const;
  std::size_t GlobalWidth() const;
  int Outputs() const { return spec_.type == SparseModelType::kSoftmax ? spec_.classes : 1; }
  // A feature's slot before training: 0, but FM's factors, drawn from (seed, feature) so that
  // every process that first meets a feature gives it the same values.
  void InitSlot(std::uint64_t seed, std::uint32_t feature, float* slot) const;

  // The scores of the batch's rows, out [rows x Outputs()] (logits).
  void Forward(const SparseBatch& batch, const float* slots, const float* globals,
               float* out) const;
  // Loss of the batch and, overwriting grad_slots [keys x SlotWidth()] and grad_globals, the
  // gradient of the mean loss.
  model::LossValue ForwardBackward(const SparseBatch& batch, const float* slots,
                                   const float* globals, float* grad_slots,
                                   float* grad_globals) const;

 private:
  model::LossType Loss() const;

  SparseModelSpec spec_;
};

}  // namespace dtrain::sparse
