#include "config/tags_key.h"

#include <algorithm>
#include <string>

#include "config/toml_reader.h"
#include "config/toml_text.h"

namespace dtrain::config {
namespace {

constexpr std::string_view kFlag = "--tag";

// For ReadStrings.
std::string TagProblem(const std::string& tag) { return LabelProblem(tag); }

std::string TooMany(std::size_t count) {
  return "must be at most " + std::to_string(kMaxTags) + " tags, got " + std::to_string(count);
}

}  // namespace

bool LabelChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

std::string LabelProblem(std::string_view text) {
  if (!text.empty() && text.size() <= kMaxLabelLength &&
      std::all_of(text.begin(), text.end(), LabelChar)) {
    return "";
  }
  return "must be 1 to " + std::to_string(kMaxLabelLength) +
         " letters, digits, '.', '_' or '-', got " + TomlString(text);
}

std::vector<Diagnostic> AddTags(std::span<const std::string> extra,
                                std::vector<std::string>* tags) {
  std::vector<Diagnostic> problems;
  std::vector<std::string> all = *tags;
  for (const std::string& tag : extra) {
    std::string why = LabelProblem(tag);
    if (why.empty() && std::find(all.begin(), all.end(), tag) != all.end()) {
      why = TomlString(tag) + " is a tag of the job already";
    }
    if (why.empty()) {
      all.push_back(tag);
    } else {
      problems.push_back({std::string(kFlag), 0, 0, "tags", std::move(why)});
    }
  }
  if (problems.empty() && all.size() > kMaxTags) {
    problems.push_back({std::string(kFlag), 0, 0, "tags", TooMany(all.size())});
  }
  if (problems.empty()) *tags = std::move(all);
  return problems;
}

namespace internal {

void ReadTags(TableReader& top, std::vector<std::string>* out) {
  std::vector<std::string> read;
  const toml::node* node = ReadStrings(top, "tags", "tag", "tag", TagProblem, &read);
  if (node == nullptr) return;
  if (read.size() > kMaxTags) {
    top.Report(*node, "tags", TooMany(read.size()));
    return;
  }
  const toml::array& list = *node->as_array();
  for (std::size_t i = 0; i < read.size(); ++i) {
    if (std::find(read.begin(), read.begin() + static_cast<std::ptrdiff_t>(i), read[i]) !=
        read.begin() + static_cast<std::ptrdiff_t>(i)) {
      top.Report(list[i], "tags",
                 "tag " + std::to_string(i + 1) + " " + TomlString(read[i]) +
                     " is given twice: each tag once");
    }
  }
  if (!top.Failed("tags")) *out = std::move(read);
}

}  // namespace internal
}  // namespace dtrain::config
