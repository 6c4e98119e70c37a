// ReadCsv and ReadLibsvm: line-oriented text formats, parsed with std::from_chars (locale-free).
// An error names the place (file, line, column) and what is wrong, never the text found there:
// a job may point at a file its submitter should not see through a message (readers.h).
#include <sys/types.h>  // ssize_t, returned by POSIX getline

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "core/data/readers.h"

namespace dtrain::data {
namespace {

// Largest accepted class label: a guard against a regression column read as classes, which
// would otherwise ask for a model with millions of outputs.
constexpr float kMaxClassLabel = 65535.0f;

// Reads a text file one line at a time (POSIX getline), numbering lines from 1.
class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path) {
    errno = 0;
    file_ = std::fopen(path.c_str(), "r");
    if (file_ == nullptr) open_status_ = Error(std::string("cannot open: ") + std::strerror(errno));
  }
  ~LineReader() {
    std::free(buffer_);
    if (file_ != nullptr) std::fclose(file_);
  }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  const Status& open_status() const { return open_status_; }

  // Number of lines in the file (an upper bound on its data rows); rewinds to the start.
  std::size_t CountLines() {
    char chunk[1 << 16];
    std::size_t lines = 0;
    char last = '\n';
    for (std::size_t got; (got = std::fread(chunk, 1, sizeof(chunk), file_)) > 0;) {
      lines += static_cast<std::size_t>(std::count(chunk, chunk + got, '\n'));
      last = chunk[got - 1];
    }
    std::rewind(file_);  // also clears a read error; Next() meets it again and reports it
    return lines + (last != '\n' ? 1 : 0);
  }

  // The next line without its "\n" or "\r\n"; false at the end of the file or on a read error
  // (then EndStatus() says which). The view is valid until the next call.
  bool Next(std::string_view* line) {
    const ssize_t got = ::getline(&buffer_, &capacity_, file_);
    if (got < 0) return false;
    ++line_number_;
    std::size_t size = static_cast<std::size_t>(got);
    if (size > 0 && buffer_[size - 1] == '\n') --size;
    if (size > 0 && buffer_[size - 1] == '\r') --size;
    *line = std::string_view(buffer_, size);
    return true;
  }

  Status EndStatus() const {
    if (std::ferror(file_)) return Error(std::string("read error: ") + std::strerror(errno));
    return Status::Ok();
  }

  std::string Line() const { return "line " + std::to_string(line_number_); }
  Status Error(const std::string& what) const { return Status::Error(path_ + ": " + what); }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  char* buffer_ = nullptr;  // owned; grown by getline
  std::size_t capacity_ = 0;
  std::size_t line_number_ = 0;
  Status open_status_;
};

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

// A trimmed cell without surrounding double quotes.
std::string_view CellText(std::string_view cell) {
  cell = Trim(cell);
  if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') {
    cell = Trim(cell.substr(1, cell.size() - 2));
  }
  return cell;
}

// Removes and returns the next whitespace-separated token of `rest` (empty when none is left).
std::string_view NextToken(std::string_view& rest) {
  while (!rest.empty() && IsBlank(rest.front())) rest.remove_prefix(1);
  std::size_t end = 0;
  while (end < rest.size() && !IsBlank(rest[end])) ++end;
  const std::string_view token = rest.substr(0, end);
  rest.remove_prefix(end);
  return token;
}

// Parses all of `text` as a float (an optional leading '+' is allowed; "inf"/"nan" parse too).
bool ParseFloat(std::string_view text, float* value) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size();
}

// 'text' (built by appending: GCC 12 gives a false -Wrestrict for "'" + std::string(...)). Only
// for names from the job file, never for text read from the data file.
std::string Quoted(std::string_view text) {
  std::string quoted;
  quoted.reserve(text.size() + 2);
  quoted.append(1, '\'').append(text).append(1, '\'');
  return quoted;
}

// Why `text` is not a usable number, or empty when it is (stored in *value).
std::string NumberProblem(std::string_view text, float* value) {
  if (text.empty()) return "missing number";
  if (!ParseFloat(text, value)) return "not a number";
  if (!std::isfinite(*value)) return "not a finite number";
  return {};
}

// Validates labels row by row and settles num_classes once all are read. Classification labels
// must be integers; all in {-1, +1} map to {0, 1}, otherwise none may be negative.
class LabelRule {
 public:
  explicit LabelRule(bool classification) : classification_(classification) {}

  // Empty if `label` may be a label, else what is wrong with it. `where` names its place.
  std::string Check(float label, const std::string& where) {
    if (!classification_) return {};
    if (label != std::floor(label)) return "class label is not an integer";
    if (std::fabs(label) > kMaxClassLabel) {
      return "class label is larger than " + std::to_string(static_cast<int>(kMaxClassLabel));
    }
    if (label != 1.0f && label != -1.0f) only_plus_minus_one_ = false;
    if (label < 0.0f && first_negative_.empty()) {
      first_negative_ = where + ": class label is negative";
    }
    return {};
  }

  // Maps -1/+1 labels to 0/1 if that rule applies; returns num_classes (0 for regression).
  Result<int> Finish(std::vector<float>& labels, const LineReader& reader) const {
    if (!classification_) return 0;
    if (!first_negative_.empty()) {
      if (!only_plus_minus_one_) {
        return reader.Error(first_negative_ +
                            " (class labels must be non-negative integers, or all -1/+1)");
      }
      for (float& label : labels) label = label > 0.0f ? 1.0f : 0.0f;
    }
    return 1 + static_cast<int>(*std::max_element(labels.begin(), labels.end()));
  }

 private:
  bool classification_;
  bool only_plus_minus_one_ = true;
  std::string first_negative_;  // "line N, column C: ..." of the first negative label, if any
};

// Returns the next line that holds more than blanks.
bool NextNonBlank(LineReader& reader, std::string_view* line) {
  while (reader.Next(line)) {
    if (!Trim(*line).empty()) return true;
  }
  return false;
}

// Splits `line` at every delimiter into *cells (reusing its capacity).
void SplitCells(std::string_view line, char delimiter, std::vector<std::string_view>* cells) {
  cells->clear();
  std::size_t start = 0;
  for (std::size_t end; (end = line.find(delimiter, start)) != std::string_view::npos;
       start = end + 1) {
    cells->push_back(line.substr(start, end - start));
  }
  cells->push_back(line.substr(start));
}

// Completes a data set whose lines have all been read: the file must have ended without a read
// error and held rows; then the label rule settles the labels and num_classes.
Result<Dataset> Complete(Dataset d, const LabelRule& rule, const LineReader& reader) {
  if (Status end = reader.EndStatus(); !end.ok()) return end;
  if (d.labels.empty()) return reader.Error("no data rows");
  d.rows = d.labels.size();
  Result<int> classes = rule.Finish(d.labels, reader);
  if (!classes.ok()) return classes.status();
  d.num_classes = classes.value();
  return d;
}

}  // namespace

Result<Dataset> ReadCsv(const std::string& path, const CsvOptions& options) {
  LineReader reader(path);
  if (!reader.open_status().ok()) return reader.open_status();
  if (!options.header && !options.label_column.empty()) {
    return reader.Error("label column " + Quoted(options.label_column) +
                        " is given by name, which needs a header line");
  }
  const std::size_t line_count = reader.CountLines();

  std::string_view line;
  std::vector<std::string_view> cells;
  std::vector<std::string> names;  // the header's: compared, never quoted
  if (options.header) {
    if (!NextNonBlank(reader, &line)) {
      Status end = reader.EndStatus();
      return end.ok() ? reader.Error("empty file: no header line") : end;
    }
    SplitCells(line, options.delimiter, &cells);
    for (std::string_view cell : cells) names.emplace_back(CellText(cell));
  }
  bool have_row = NextNonBlank(reader, &line);
  if (!have_row) {
    Status end = reader.EndStatus();
    return end.ok() ? reader.Error("no data rows") : end;
  }
  SplitCells(line, options.delimiter, &cells);
  const std::size_t columns = options.header ? names.size() : cells.size();
  if (columns < 2) {
    return reader.Error("needs at least 2 columns (features and a label), found " +
                        std::to_string(columns));
  }

  std::size_t label_col = columns - 1;
  if (!options.label_column.empty()) {
    const auto it = std::find(names.begin(), names.end(), options.label_column);
    if (it == names.end()) {
      return reader.Error("no column named " + Quoted(options.label_column) +
                          " (data.label_column) in the header line, which names " +
                          std::to_string(columns) + " columns");
    }
    label_col = static_cast<std::size_t>(it - names.begin());
  } else if (options.label_index >= 0) {
    label_col = static_cast<std::size_t>(options.label_index);
    if (label_col >= columns) {
      return reader.Error("label index " + std::to_string(options.label_index) +
                          " is out of range: the file has " + std::to_string(columns) +
                          " columns (0-based indices)");
    }
  }
  const auto where = [&](std::size_t c) {
    return reader.Line() + ", column " + std::to_string(c + 1);
  };

  Dataset d;
  d.source = path;
  d.features = columns - 1;
  d.floats.reserve(line_count * d.features);
  d.labels.reserve(line_count);
  LabelRule rule(options.classification);
  for (; have_row; have_row = NextNonBlank(reader, &line)) {
    SplitCells(line, options.delimiter, &cells);
    if (cells.size() != columns) {
      return reader.Error(reader.Line() + ": expected " + std::to_string(columns) +
                          " columns, found " + std::to_string(cells.size()));
    }
    for (std::size_t c = 0; c < columns; ++c) {
      const std::string_view text = CellText(cells[c]);
      float value = 0.0f;
      if (std::string problem = NumberProblem(text, &value); !problem.empty()) {
        return reader.Error(where(c) + ": " + problem);
      }
      if (c != label_col) {
        d.floats.push_back(value);
        continue;
      }
      if (std::string problem = rule.Check(value, where(c)); !problem.empty()) {
        return reader.Error(where(c) + ": " + problem);
      }
      d.labels.push_back(value);
    }
  }
  return Complete(std::move(d), rule, reader);
}

Result<Dataset> ReadLibsvm(const std::string& path, std::size_t features, bool classification) {
  LineReader reader(path);
  if (!reader.open_status().ok()) return reader.open_status();
  if (features == 0 || features > static_cast<std::size_t>(INT_MAX)) {
    return reader.Error("invalid feature count " + std::to_string(features));
  }
  const std::size_t line_count = reader.CountLines();

  Dataset d;
  d.source = path;
  d.features = features;
  d.floats.reserve(line_count * features);
  d.labels.reserve(line_count);
  LabelRule rule(classification);
  std::string_view line;
  while (reader.Next(&line)) {
    std::string_view rest = line.substr(0, line.find('#'));
    const std::string_view label_text = NextToken(rest);
    if (label_text.empty()) continue;  // blank or comment-only line
    // "line N, column C": C is the 1-based byte position of `token` in the line.
    const auto where = [&](std::string_view token) {
      return reader.Line() + ", column " + std::to_string(token.data() - line.data() + 1);
    };
    float label = 0.0f;
    if (std::string problem = NumberProblem(label_text, &label); !problem.empty()) {
      return reader.Error(where(label_text) + ": bad label: " + problem);
    }
    if (std::string problem = rule.Check(label, where(label_text)); !problem.empty()) {
      return reader.Error(where(label_text) + ": " + problem);
    }
    d.labels.push_back(label);

    const std::size_t row_start = d.floats.size();
    d.floats.resize(row_start + features, 0.0f);
    for (std::string_view token = NextToken(rest); !token.empty(); token = NextToken(rest)) {
      const std::size_t colon = token.find(':');
      if (colon == std::string_view::npos) {
        return reader.Error(where(token) + ": not an index:value pair");
      }
      const std::string_view index_text = token.substr(0, colon);
      std::size_t index = 0;
      const auto [end, error] =
          std::from_chars(index_text.data(), index_text.data() + index_text.size(), index);
      if (end != index_text.data() + index_text.size() || index_text.empty()) {
        return reader.Error(where(token) + ": the feature index is not a non-negative integer");
      }
      if (error != std::errc() || index == 0 || index > features) {  // out_of_range: too large
        return reader.Error(where(token) + ": the feature index is out of range 1.." +
                            std::to_string(features) + " (data.features)");
      }
      float value = 0.0f;
      if (std::string problem = NumberProblem(token.substr(colon + 1), &value); !problem.empty()) {
        return reader.Error(where(token) + ": feature value: " + problem);
      }
      d.floats[row_start + index - 1] = value;
    }
  }
  return Complete(std::move(d), rule, reader);
}

}  // namespace dtrain::data
