// The sparse model file: a trained sparse model that stands on its own — its spec, how feature
// names become keys (hash bits, feature count), and the slots of the keys training touched —
// written by `dtrain export` of a sparse job and read by `dtrain predict` / `dtrain eval`. Its
// size is proportional to the touched keys. The format is in core/train/model_format.md ("Sparse
// model files"); this file is its only codec.
//
//   Status s = WriteSparseModelFile("ctr.dtm", file);
//   if (IsSparseModelFile(bytes)) Result<SparseModelFile> m = DecodeSparseModelFile(bytes);
//
// A damaged, truncated or foreign file is an error naming the problem, never a crash or an
// allocation of a size the file does not hold. Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/sparse/sparse_model.h"
#include "core/status.h"

namespace dtrain::sparse {

inline constexpr std::uint32_t kSparseModelFormatVersion = 1;

struct SparseModelFile {
  SparseModelSpec spec;
  int hash_bits = 0;           // as the job's data.hash_bits: 0 means indices are keys - 1
  std::uint64_t features = 0;  // the training data's feature count
  std::int64_t step = 0;
  std::string job_name;
  std::vector<std::uint32_t> keys;  // any order, unique
  std::vector<float> slots;         // keys x SlotWidth()
  std::vector<float> globals;       // GlobalWidth()
};

bool IsSparseModelFile(std::string_view bytes);
std::string EncodeSparseModelFile(const SparseModelFile& file);
Result<SparseModelFile> DecodeSparseModelFile(std::string_view bytes);

Status WriteSparseModelFile(const std::string& path, const SparseModelFile& file);

}  // namespace dtrain::sparse
