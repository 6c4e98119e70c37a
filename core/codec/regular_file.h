// Opening a file for reading only when it is a regular file: a data path, model file or job file
// that names a FIFO, a device (/dev/zero, /dev/urandom, a tty) or a socket is refused at once,
// instead of hanging the reader or feeding it without end. The open itself never blocks (a FIFO
// with no writer), and the check is made on the opened descriptor (fstat), so re-pointing a
// symlink between a check and the open changes nothing.
//
//   Result<int> fd = OpenRegularFile(path);   // O_RDONLY | O_CLOEXEC, blocking reads
//
// Errors are the bare reason ("Permission denied", "it is a FIFO, not a regular file"): callers
// say what they were doing and put the path in front. The caller owns the descriptor.
// Thread-safe.
#pragma once

#include <string>

#include "core/status.h"

namespace dtrain::codec {

Result<int> OpenRegularFile(const std::string& path);

// Empty for a regular file's st_mode; else what it is instead ("a FIFO", "a directory", ...).
std::string NotRegularKind(unsigned mode);

}  // namespace dtrain::codec
