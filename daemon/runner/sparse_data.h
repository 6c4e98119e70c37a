// SparseJobData: what a sparse job's [data] and [model] resolve to at run time — the training
// rows and held-out rows kept sparse (data::SparseRows), and the sparse model spec with softmax's
// classes taken from the data.
//
//   Result<SparseJobData> d = LoadSparseJobData(job);    // job.data.sparse
//   sparse::SparseModel model(d.value().spec);
//
// The held-out set is the test file when the job names one, else a validation split of the
// training rows (data.validation_fraction, the rows a dense job would hold out), else none.
// Every feature index a row uses is read as given (1-based in the file, a key from 0 here), or
// hashed (data.hash_bits). With data.stream the training file is indexed (read once, checked,
// never held) rather than loaded. Plain values; LoadSparseJobData is safe for concurrent use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config/job.h"
#include "core/data/libsvm_blocks.h"
#include "core/data/sparse_rows.h"
#include "core/sparse/sparse_model.h"
#include "core/status.h"

namespace dtrain::runner {

struct SparseJobData {
  data::SparseRows train;  // when streamed: no rows, the file's features and classes
  // data.stream: the training file's blocks, read one at a time while training.
  std::optional<data::LibsvmBlockIndex> stream;
  data::SparseRows eval;  // rows() == 0: nothing to evaluate on
  std::string eval_name;  // "test", "validation" or "" (none)
  sparse::SparseModelSpec spec;

  std::uint64_t TrainRows() const { return stream ? stream->rows : train.rows(); }
};

Result<SparseJobData> LoadSparseJobData(const config::JobConfig& job);

// How the job's libsvm files are read: its features and hash bits, class labels.
data::LibsvmOptions SparseReadOptions(const config::DataConfig& data);

}  // namespace dtrain::runner
