// ReadLibsvmSparse, and ReadLibsvm on top of it: libsvm/svmlight text read into compressed
// sparse rows. An error names the place (file, line, column) and what is wrong, never the text
// found there (readers.h).
#include <algorithm>
#include <charconv>
#include <climits>
#include <utility>

#include "core/data/libsvm_lines.h"
#include "core/data/random.h"
#include "core/data/readers.h"
#include "core/data/sparse_rows.h"
#include "core/data/text_lines.h"

namespace dtrain::data {
namespace {

using text::LineReader;

// Sorts the row that starts at `start` by feature and sums the values of repeated features.
// `pairs` is scratch, kept across rows so that a hashed file's rows allocate nothing.
void MergeRow(SparseRows& d, std::size_t start,
              std::vector<std::pair<std::uint32_t, float>>& pairs) {
  pairs.clear();
  for (std::size_t i = start; i < d.index.size(); ++i) pairs.emplace_back(d.index[i], d.value[i]);
  std::sort(pairs.begin(), pairs.end());  // by feature, then value: the same sums every time
  d.index.resize(start);
  d.value.resize(start);
  for (const auto& [feature, value] : pairs) {
    if (d.index.size() > start && d.index.back() == feature) {
      d.value.back() += value;
    } else {
      d.index.push_back(feature);
      d.value.push_back(value);
    }
  }
}

}  // namespace

std::uint32_t HashFeature(std::string_view name, int bits) {
  std::uint64_t h = 0xCBF29CE484222325ULL;  // FNV-1a, 64 bits
  for (const char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001B3ULL;
  }
  return static_cast<std::uint32_t>(SplitMix64::Finalize(h) >> (64 - bits));
}

LibsvmLineParser::LibsvmLineParser(const LibsvmOptions& options)
    : options_(options),
      hashed_(options.hash_bits > 0),
      limit_(options.features > 0 ? options.features : kMaxSparseFeatures),
      rule_(options.classification) {}

Status LibsvmLineParser::Check(const LibsvmOptions& options, const LineReader& reader) {
  if (options.hash_bits < 0 || options.hash_bits > 32) {
    return reader.Error("hash_bits must be in [0, 32], got " + std::to_string(options.hash_bits));
  }
  if (options.features > kMaxSparseFeatures) {
    return reader.Error("invalid feature count " + std::to_string(options.features));
  }
  return Status::Ok();
}

std::uint64_t LibsvmLineParser::Features() const {
  if (hashed_) return std::uint64_t{1} << options_.hash_bits;
  return options_.features > 0 ? options_.features : largest_;
}

Status LibsvmLineParser::Add(std::string_view line, const LineReader& reader, SparseRows& d) {
  std::string_view rest = line.substr(0, line.find('#'));
  const std::string_view label_text = text::NextToken(rest);
  if (label_text.empty()) return Status::Ok();  // blank or comment-only line
  // "line N, column C": C is the 1-based byte position of `token` in the line.
  const auto where = [&](std::string_view token) {
    return reader.Line() + ", column " + std::to_string(token.data() - line.data() + 1);
  };
  if (label_text.find(',') != std::string_view::npos) {
    return reader.Error(where(label_text) +
                        ": multilabel rows (labels joined by commas) are not supported: give "
                        "each row one label");
  }
  float label = 0.0f;
  if (std::string problem = text::NumberProblem(label_text, &label); !problem.empty()) {
    return reader.Error(where(label_text) + ": bad label: " + problem);
  }
  if (std::string problem = rule_.Check(label, where(label_text)); !problem.empty()) {
    return reader.Error(where(label_text) + ": " + problem);
  }
  d.labels.push_back(label);

  const std::size_t row_start = d.index.size();
  bool sorted = true;
  for (std::string_view token = text::NextToken(rest); !token.empty();
       token = text::NextToken(rest)) {
    const std::size_t colon = token.rfind(':');
    if (colon == std::string_view::npos || (hashed_ && colon == 0)) {
      return reader.Error(where(token) + ": not an index:value pair");
    }
    const std::string_view name = token.substr(0, colon);
    std::uint64_t feature = 0;  // 0-based
    if (hashed_) {
      feature = HashFeature(name, options_.hash_bits);
    } else {
      std::uint64_t index = 0;
      const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), index);
      if (end != name.data() + name.size() || name.empty()) {
        return reader.Error(where(token) + ": the feature index is not a non-negative integer");
      }
      if (error != std::errc() || index == 0 || index > limit_) {  // out_of_range: too large
        return reader.Error(where(token) + ": the feature index is out of range 1.." +
                            std::to_string(limit_) +
                            (options_.features > 0 ? " (data.features)" : ""));
      }
      feature = index - 1;
    }
    float value = 0.0f;
    if (std::string problem = text::NumberProblem(token.substr(colon + 1), &value);
        !problem.empty()) {
      return reader.Error(where(token) + ": feature value: " + problem);
    }
    sorted = sorted && (d.index.size() == row_start || d.index.back() < feature);
    d.index.push_back(static_cast<std::uint32_t>(feature));
    d.value.push_back(value);
    largest_ = std::max(largest_, feature + 1);
  }
  if (!sorted) MergeRow(d, row_start, pairs_);
  d.row_start.push_back(d.index.size());
  return Status::Ok();
}

Result<SparseRows> ReadLibsvmSparse(const std::string& path, const LibsvmOptions& options) {
  LineReader reader(path);
  if (!reader.open_status().ok()) return reader.open_status();
  if (Status valid = LibsvmLineParser::Check(options, reader); !valid.ok()) return valid;
  LibsvmLineParser parser(options);
  SparseRows d;
  d.source = path;
  std::string_view line;
  while (reader.Next(&line)) {
    if (Status added = parser.Add(line, reader, d); !added.ok()) return added;
  }
  if (Status end = reader.EndStatus(); !end.ok()) return end;
  if (d.labels.empty()) return reader.Error("no data rows");
  Result<int> classes = parser.rule().Finish(d.labels, reader.path());
  if (!classes.ok()) return classes.status();
  d.num_classes = classes.value();
  d.features = parser.Features();
  return d;
}

Result<Dataset> ReadLibsvm(const std::string& path, std::size_t features, bool classification) {
  if (features == 0 || features > static_cast<std::size_t>(INT_MAX)) {
    if (Status open = LineReader(path).open_status(); !open.ok()) return open;
    return Status::Error(path + ": invalid feature count " + std::to_string(features));
  }
  Result<SparseRows> rows =
      ReadLibsvmSparse(path, {.features = features, .classification = classification});
  if (!rows.ok()) return rows.status();
  return Densify(rows.value());
}

}  // namespace dtrain::data
