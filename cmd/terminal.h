// Terminal habits shared by every subcommand: whether a stream is a TTY (progress bars only
// there), whether colour is allowed (NO_COLOR, TTY), and the error line format.
//
//   if (StderrIsTty()) DrawBar(...);
//   PrintError("cannot open store: " + message);   // "dtrain: error: cannot open store: ..."
//
// Reads the environment on each call; safe for concurrent use.
#pragma once

#include <string_view>

namespace dtrain::cli {

bool StdoutIsTty();
bool StderrIsTty();
// True when stderr is a TTY, NO_COLOR is unset or empty, and TERM is not "dumb".
bool ColorOnStderr();
void PrintError(std::string_view message);

}  // namespace dtrain::cli
