// LibsvmLineParser: the rows of libsvm/svmlight text, one line at a time, appended to SparseRows
// — what ReadLibsvmSparse reads a whole file with and a streamed file's blocks are read with
// (libsvm_blocks.h). Internal to core/data's readers: errors name the place (file, line, column)
// and what is wrong, never the text found there (readers.h).
//
//   LibsvmLineParser parser(options);        // options checked by Check first
//   while (reader.Next(&line)) if (Status s = parser.Add(line, reader, rows); !s.ok()) return s;
//   parser.rule().Finish(rows.labels, reader);  // labels settled over every row added
//
// One thread at a time.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "core/data/sparse_rows.h"
#include "core/data/text_lines.h"
#include "core/status.h"

namespace dtrain::data {

class LibsvmLineParser {
 public:
  explicit LibsvmLineParser(const LibsvmOptions& options);

  // What is wrong with `options` (hash bits, feature count), as `reader`'s error; Ok if nothing.
  static Status Check(const LibsvmOptions& options, const text::LineReader& reader);
  // Appends the row `line` holds, if any (blank and comment-only lines hold none), to `rows`.
  Status Add(std::string_view line, const text::LineReader& reader, SparseRows& rows);
  // The labels' rule, over every row added so far.
  const text::LabelRule& rule() const { return rule_; }
  // The feature count: 2^hash_bits when hashing, else options.features or, when 0, the largest
  // index added so far.
  std::uint64_t Features() const;

 private:
  LibsvmOptions options_;
  bool hashed_;
  std::uint64_t limit_;
  std::uint64_t largest_ = 0;
  text::LabelRule rule_;
  std::vector<std::pair<std::uint32_t, float>> pairs_;  // a row's, to sort (kept: no allocation)
};

}  // namespace dtrain::data
