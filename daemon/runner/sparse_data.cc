#include "daemon/runner/sparse_data.h"

#include <algorithm>
#include <utility>

namespace dtrain::runner {

data::LibsvmOptions SparseReadOptions(const config::DataConfig& d) {
  return {.features = static_cast<std::uint64_t>(d.features),
          .hash_bits = d.hash_bits,
          .classification = true};
}

Result<SparseJobData> LoadSparseJobData(const config::JobConfig& job) {
  const config::DataConfig& d = job.data;
  SparseJobData out;
  if (d.stream) {
    const auto block_bytes = static_cast<std::uint64_t>(d.stream_block_mib * 1024 * 1024);
    Result<data::LibsvmBlockIndex> index = data::IndexLibsvmBlocks(
        d.train, SparseReadOptions(d), std::max<std::uint64_t>(block_bytes, 1));
    if (!index.ok()) return index.status();
    out.stream = std::move(index).value();
    out.train.source = d.train;
    out.train.features = out.stream->features;
    out.train.num_classes = out.stream->num_classes;
  } else {
    Result<data::SparseRows> train = data::ReadLibsvmSparse(d.train, SparseReadOptions(d));
    if (!train.ok()) return train.status();
    out.train = std::move(train).value();
  }
  if (!d.test.empty()) {
    Result<data::SparseRows> test = data::ReadLibsvmSparse(d.test, SparseReadOptions(d));
    if (!test.ok()) return test.status();
    out.eval = std::move(test).value();
    out.eval_name = "test";
  } else if (d.validation_fraction > 0.0) {
    std::tie(out.train, out.eval) =
        data::SplitValidation(out.train, d.validation_fraction, job.train.seed);
    out.eval_name = "validation";
  }
  if (out.TrainRows() == 0) return Status::Error(out.train.source + " holds no rows");

  out.spec = job.sparse_model;
  const int classes = std::max(out.train.num_classes, out.eval.num_classes);
  if (out.spec.type == sparse::SparseModelType::kSoftmax) {
    out.spec.classes = std::max(classes, 2);
  } else if (classes > 2) {
    const data::SparseRows& which = out.eval.num_classes > 2 ? out.eval : out.train;
    return Status::Error("model.type \"" + std::string(sparse::SparseModelTypeName(out.spec.type)) +
                         "\" takes labels 0/1 (or -1/+1), but " + which.source + " has " +
                         std::to_string(which.num_classes) +
                         " classes: use type \"softmax\" for several");
  }
  if (Status valid = sparse::ValidateSparseModelSpec(out.spec); !valid.ok()) return valid;
  return out;
}

}  // namespace dtrain::runner
