// Whole files as bytes: written atomically (a temporary file beside the target, fsynced, then
// renamed over it, so the target is never half-written) and read back whole. For model files.
//
//   Status s = WriteFileAtomically("model.dtm", bytes);
//   Result<std::string> back = ReadFileBytes("model.dtm");
//
// Errors name the path and the system's reason. Safe for concurrent use on different paths.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace dtrain::codec {

Status WriteFileAtomically(const std::string& path, std::string_view bytes);
Result<std::string> ReadFileBytes(const std::string& path);

}  // namespace dtrain::codec
