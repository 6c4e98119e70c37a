// A job's tags: the top-level `tags = ["baseline", "lr-sweep"]` of a job file and the tags
// `dtrain submit/run --tag` add to them. `dtrain list --tag` selects jobs by them.
//
// Invariants of a job's tags (JobConfig::tags), wherever they came from: each is a label (1 to
// kMaxLabelLength letters, digits, '.', '_' or '-', the rule of a job's name too), at most
// kMaxTags of them, no two alike, in the order given.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/job.h"

namespace dtrain::config {

inline constexpr std::size_t kMaxLabelLength = 64;
inline constexpr std::size_t kMaxTags = 32;

// Whether `c` may be in a label (a job's name, a tag); why `text` is not one, or "".
bool LabelChar(char c);
std::string LabelProblem(std::string_view text);

// `extra` (what --tag gave, in order) appended to `tags`; a diagnostic (file "--tag", key
// "tags") for each tag that is not a label or is there already, and one when there would be
// more than kMaxTags. `tags` is changed only when there is none.
std::vector<Diagnostic> AddTags(std::span<const std::string> extra, std::vector<std::string>* tags);

namespace internal {
class TableReader;  // config/toml_reader.h
// The top-level `tags` of a job file into `out`, each problem reported at its tag.
void ReadTags(TableReader& top, std::vector<std::string>* out);
}  // namespace internal

}  // namespace dtrain::config
