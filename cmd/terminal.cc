#include "cmd/terminal.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>

namespace dtrain::cli {

bool StdoutIsTty() { return ::isatty(STDOUT_FILENO) == 1; }
bool StderrIsTty() { return ::isatty(STDERR_FILENO) == 1; }

bool ColorOnStderr() {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::strcmp(term, "dumb") == 0) return false;
  return StderrIsTty();
}

void PrintError(std::string_view message) {
  if (ColorOnStderr()) {
    std::cerr << "dtrain: \033[1;31merror:\033[0m " << message << '\n';
  } else {
    std::cerr << "dtrain: error: " << message << '\n';
  }
}

}  // namespace dtrain::cli
