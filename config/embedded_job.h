// A job embedded in a larger document: a sweep file's inline base job is the sweep file without
// its [sweep] table. Internal to dtrain_config; the job is read exactly as ParseJobText reads a
// job file (same keys, same diagnostics at the document's own lines), overrides included.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/job_file.h"

namespace dtrain::config::internal {

// ParseJobText of `toml_text` with its top-level key `without` (a table or a value) left out.
LoadResult ParseEmbeddedJob(std::string_view toml_text, std::string_view without,
                            const std::string& display_path,
                            const std::vector<std::string>& overrides, const std::string& base_dir,
                            const JobChecks& checks);

}  // namespace dtrain::config::internal
