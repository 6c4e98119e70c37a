// Running a sparse model file over sparse rows: predictions (class indices), and loss, accuracy
// and (binary models) AUC against the rows' labels — what `dtrain predict` and `dtrain eval`
// print for a sparse model. A key the model never touched weighs 0.
//
//   Result<train::InferenceResult> r = RunSparseInference(file, rows);
//
// Pure function.
#pragma once

#include "core/data/sparse_rows.h"
#include "core/sparse/sparse_model_file.h"
#include "core/status.h"
#include "core/train/inference.h"

namespace dtrain::sparse {

Result<train::InferenceResult> RunSparseInference(const SparseModelFile& file,
                                                  const data::SparseRows& rows);

}  // namespace dtrain::sparse
