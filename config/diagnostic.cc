#include <string>

#include "config/job.h"

namespace dtrain::config {

std::string FormatDiagnostic(const Diagnostic& d) {
  std::string out = d.file;
  if (d.line > 0) {
    // Appended piece by piece: `":" + std::to_string(...)` trips GCC 12's -Wrestrict.
    out += ':';
    out += std::to_string(d.line);
    out += ':';
    out += std::to_string(d.column);
  }
  out += ": ";
  if (!d.key.empty()) {
    out += d.key;
    out += ": ";
  }
  out += d.message;
  return out;
}

}  // namespace dtrain::config
