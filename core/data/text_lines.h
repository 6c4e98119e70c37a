// Reading line-oriented text data (CSV, libsvm): lines numbered from 1, whitespace tokens,
// numbers parsed locale-free with std::from_chars, and the rule that settles class labels (which
// the NumPy reader applies too). Internal to core/data's readers. Messages name places (line,
// column), never the text found there (readers.h). One thread at a time per LineReader or
// LabelRule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace dtrain::data::text {

// Largest accepted class label: a guard against a regression column read as classes, which
// would otherwise ask for a model with millions of outputs.
inline constexpr float kMaxClassLabel = 65535.0f;

// Reads a text file one line at a time (POSIX getline), numbering lines from 1; or one part of
// it: the `bytes` bytes from `offset`, which must start a line, whose first is line `first_line`
// of the file.
class LineReader {
 public:
  explicit LineReader(const std::string& path);
  LineReader(const std::string& path, std::uint64_t offset, std::uint64_t bytes,
             std::uint64_t first_line);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  const Status& open_status() const { return open_status_; }
  // Number of lines in the file (an upper bound on its data rows); rewinds to the start.
  std::size_t CountLines();
  // The next line without its "\n" or "\r\n"; false at the end of the file or on a read error
  // (then EndStatus() says which). The view is valid until the next call.
  bool Next(std::string_view* line);
  Status EndStatus() const;
  std::string Line() const { return "line " + std::to_string(line_number_); }
  std::uint64_t line_number() const { return line_number_; }
  // Bytes of the file read so far (its offset after the last line Next gave).
  std::uint64_t offset() const { return offset_; }
  Status Error(const std::string& what) const { return Status::Error(path_ + ": " + what); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  char* buffer_ = nullptr;  // owned; grown by getline
  std::size_t capacity_ = 0;
  std::uint64_t line_number_ = 0;
  std::uint64_t offset_ = 0;
  std::uint64_t end_ = UINT64_MAX;  // Next stops at this offset
  Status open_status_;
};

bool IsBlank(char c);
std::string_view Trim(std::string_view s);
// Removes and returns the next whitespace-separated token of `rest` (empty when none is left).
std::string_view NextToken(std::string_view& rest);
// Why `text` is not a usable number (all of it a finite float, an optional leading '+'), or
// empty when it is (stored in *value).
std::string NumberProblem(std::string_view text, float* value);

// Validates labels row by row and settles num_classes once all are read. Classification labels
// must be integers; all in {-1, +1} map to {0, 1}, otherwise none may be negative.
class LabelRule {
 public:
  explicit LabelRule(bool classification) : classification_(classification) {}

  // Empty if `label` may be a label, else what is wrong with it. `where` names its place.
  std::string Check(float label, const std::string& where);
  // Maps -1/+1 labels to 0/1 if that rule applies; returns num_classes (0 for regression). An
  // error starts with `path`, the labels' file.
  Result<int> Finish(std::vector<float>& labels, const std::string& path) const;
  // -1/+1 labels as 0/1.
  static void MapToZeroOne(std::vector<float>& labels);
  // After every label's Check: whether Finish maps them (-1/+1 labels, some negative).
  bool MapsPlusMinusOne() const {
    return classification_ && !first_negative_.empty() && only_plus_minus_one_;
  }

 private:
  bool classification_;
  bool only_plus_minus_one_ = true;
  std::string first_negative_;  // "line N, column C: ..." of the first negative label, if any
};

}  // namespace dtrain::data::text
