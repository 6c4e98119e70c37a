// ReadCsv: delimited text, numbers parsed locale-free (text_lines.h).
// An error names the place (file, line, column) and what is wrong, never the text found there:
// a job may point at a file its submitter should not see through a message (readers.h).
#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "core/data/readers.h"
#include "core/data/text_lines.h"

namespace dtrain::data {
namespace {

using text::LabelRule;
using text::LineReader;
using text::NumberProblem;
using text::Trim;

// A trimmed cell without surrounding double quotes.
std::string_view CellText(std::string_view cell) {
  cell = Trim(cell);
  if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') {
    cell = Trim(cell.substr(1, cell.size() - 2));
  }
  return cell;
}

// 'text' (built by appending: GCC 12 gives a false -Wrestrict for "'" + std::string(...)). Only
// for names from the job file, never for text read from the data file.
std::string Quoted(std::string_view text) {
  std::string quoted;
  quoted.reserve(text.size() + 2);
  quoted.append(1, '\'').append(text).append(1, '\'');
  return quoted;
}

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
  Result<int> classes = rule.Finish(d.labels, reader.path());
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
  if (options.labels && columns < 2) {
    return reader.Error("needs at least 2 columns (features and a label), found " +
                        std::to_string(columns));
  }

  std::size_t label_col = options.labels ? columns - 1 : columns;  // columns: none
  if (options.labels && !options.label_column.empty()) {
    const auto it = std::find(names.begin(), names.end(), options.label_column);
    if (it == names.end()) {
      return reader.Error("no column named " + Quoted(options.label_column) +
                          " (data.label_column) in the header line, which names " +
                          std::to_string(columns) + " columns");
    }
    label_col = static_cast<std::size_t>(it - names.begin());
  } else if (options.labels && options.label_index >= 0) {
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
  d.features = options.labels ? columns - 1 : columns;
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
    if (!options.labels) d.labels.push_back(0.0f);
  }
  return Complete(std::move(d), rule, reader);
}

Result<std::vector<std::string>> ReadCsvFirstLine(const std::string& path, char delimiter) {
  LineReader reader(path);
  if (!reader.open_status().ok()) return reader.open_status();
  std::string_view line;
  if (!NextNonBlank(reader, &line)) {
    Status end = reader.EndStatus();
    return end.ok() ? reader.Error("empty file") : end;
  }
  std::vector<std::string_view> cells;
  SplitCells(line, delimiter, &cells);
  std::vector<std::string> out;
  for (std::string_view cell : cells) out.emplace_back(CellText(cell));
  return out;
}

}  // namespace dtrain::data
