#include "core/data/libsvm_blocks.h"

#include <algorithm>
#include <limits>
#include <string_view>

#include "core/data/libsvm_lines.h"
#include "core/data/text_lines.h"

namespace dtrain::data {

using text::LineReader;

Result<LibsvmBlockIndex> IndexLibsvmBlocks(const std::string& path, const LibsvmOptions& options,
                                           std::uint64_t block_bytes) {
  LineReader reader(path);
  if (!reader.open_status().ok()) return reader.open_status();
  if (Status valid = LibsvmLineParser::Check(options, reader); !valid.ok()) return valid;
  if (block_bytes == 0) return reader.Error("a block of 0 bytes");
  LibsvmLineParser parser(options);
  LibsvmBlockIndex index;
  index.path = path;
  index.options = options;
  SparseRows block_rows;  // the block's, to check them; cleared at each block's end
  float lowest = std::numeric_limits<float>::infinity();
  float highest = -lowest;
  LibsvmBlock block;
  const auto close_block = [&] {
    block.bytes = reader.offset() - block.offset;
    block.rows = block_rows.rows();
    for (const float label : block_rows.labels) {
      lowest = std::min(lowest, label);
      highest = std::max(highest, label);
    }
    if (block.rows > 0) index.blocks.push_back(block);
    index.rows += block.rows;
    block_rows.labels.clear();
    block_rows.index.clear();
    block_rows.value.clear();
    block_rows.row_start.assign(1, 0);
    block = LibsvmBlock{};
    block.offset = reader.offset();
    block.first_line = reader.line_number() + 1;
  };
  std::string_view line;
  while (reader.Next(&line)) {
    if (Status added = parser.Add(line, reader, block_rows); !added.ok()) return added;
    if (reader.offset() - block.offset >= block_bytes) close_block();
  }
  if (Status end = reader.EndStatus(); !end.ok()) return end;
  close_block();
  if (index.rows == 0) return reader.Error("no data rows");
  // The classes of the whole file: the rule's verdict on its lowest and highest labels.
  std::vector<float> extremes{lowest, highest};
  Result<int> classes = parser.rule().Finish(extremes, reader.path());
  if (!classes.ok()) return classes.status();
  index.num_classes = classes.value();
  index.maps_plus_minus_one = parser.rule().MapsPlusMinusOne();
  index.features = parser.Features();
  return index;
}

Result<SparseRows> ReadLibsvmBlock(const LibsvmBlockIndex& index, std::size_t b) {
  const LibsvmBlock& block = index.blocks.at(b);
  LineReader reader(index.path, block.offset, block.bytes, block.first_line);
  if (!reader.open_status().ok()) return reader.open_status();
  LibsvmOptions options = index.options;
  if (options.hash_bits == 0) options.features = index.features;
  LibsvmLineParser parser(options);
  SparseRows rows;
  rows.source = index.path;
  std::string_view line;
  while (reader.Next(&line)) {
    if (Status added = parser.Add(line, reader, rows); !added.ok()) return added;
  }
  if (Status end = reader.EndStatus(); !end.ok()) return end;
  if (rows.rows() != block.rows) {
    return reader.Error("lines " + std::to_string(block.first_line) + " to " +
                        std::to_string(reader.line_number()) + " hold " +
                        std::to_string(rows.rows()) + " rows, not the " +
                        std::to_string(block.rows) + " they held when the file was indexed");
  }
  if (index.maps_plus_minus_one) text::LabelRule::MapToZeroOne(rows.labels);
  rows.features = index.features;
  rows.num_classes = index.num_classes;
  return rows;
}

}  // namespace dtrain::data
