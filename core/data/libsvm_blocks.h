// Streaming a libsvm file larger than memory (data.stream): the file cut into blocks of whole
// lines of about `block_bytes` each, trained on a block at a time.
//
//   Result<LibsvmBlockIndex> index = IndexLibsvmBlocks("clicks.svm", {.hash_bits = 24}, 64 << 20);
//   Result<SparseRows> rows = ReadLibsvmBlock(index.value(), 3);   // block 3's rows
//
// IndexLibsvmBlocks reads the whole file once, parsing and checking every row as
// ReadLibsvmSparse does (so a bad line is reported before training starts), and keeps per block
// only where it lies and how many rows it holds, plus what the rows settle for the whole file:
// the feature count, the classes and whether -1/+1 labels map to 0/1. Its memory is one block's
// rows. ReadLibsvmBlock then reads one block's rows with the file's settlement (features,
// classes, label mapping), so the blocks together are exactly the rows ReadLibsvmSparse gives,
// in file order. A block that no longer holds the rows it was indexed with (the file changed) is
// an error. Plain values; ReadLibsvmBlock is safe for concurrent use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/data/sparse_rows.h"
#include "core/status.h"

namespace dtrain::data {

struct LibsvmBlock {
  std::uint64_t offset = 0;  // in the file; starts a line
  std::uint64_t bytes = 0;
  std::uint64_t first_line = 1;
  std::uint64_t rows = 0;  // > 0
};

struct LibsvmBlockIndex {
  std::string path;
  LibsvmOptions options;
  std::vector<LibsvmBlock> blocks;  // in file order
  std::uint64_t rows = 0;
  std::uint64_t features = 0;
  int num_classes = 0;
  bool maps_plus_minus_one = false;
};

Result<LibsvmBlockIndex> IndexLibsvmBlocks(const std::string& path, const LibsvmOptions& options,
                                           std::uint64_t block_bytes);
Result<SparseRows> ReadLibsvmBlock(const LibsvmBlockIndex& index, std::size_t block);

}  // namespace dtrain::data
