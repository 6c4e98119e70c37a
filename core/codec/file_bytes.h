// Whole files as bytes: written atomically (a temporary file of a random name beside the target,
// created exclusively with mode 0666 less the umask, fsynced, then renamed over it, so the target
// is never half-written and a link planted beside it is never followed) and read back whole, from a regular file
// only (codec/regular_file.h) and up to a limit. For model files and job files.
//
//   Status s = WriteFileAtomically("model.dtm", bytes);
//   Result<std::string> back = ReadFileBytes("model.dtm");
//
// Errors name the path and the system's reason. Safe for concurrent use on different paths.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

#include "core/status.h"

namespace dtrain::codec {

Status WriteFileAtomically(const std::string& path, std::string_view bytes);
// The whole regular file at `path`; an error when it holds more than `limit` bytes.
Result<std::string> ReadFileBytes(const std::string& path,
                                  std::size_t limit = std::numeric_limits<std::size_t>::max());

}  // namespace dtrain::codec
