#include "cmd/terminal.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>

namespace dtrain::cli {
namespace {

bool ColorAllowed(bool tty) {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::strcmp(term, "dumb") == 0) return false;
  return tty;
}

}  // namespace

bool StdoutIsTty() { return ::isatty(STDOUT_FILENO) == 1; }
bool StderrIsTty() { return ::isatty(STDERR_FILENO) == 1; }

bool ColorOnStdout() { return ColorAllowed(StdoutIsTty()); }
bool ColorOnStderr() { return ColorAllowed(StderrIsTty()); }

void PrintError(std::string_view message) {
  std::cerr << "dtrain: " << Paint(ColorOnStderr(), kBoldRed, "error:") << ' ' << message << '\n';
}

std::string Paint(bool color, std::string_view sgr, std::string_view text) {
  if (!color) return std::string(text);
  return "\033[" + std::string(sgr) + "m" + std::string(text) + "\033[0m";
}

}  // namespace dtrain::cli
