// Terminal habits shared by every subcommand: whether a stream is a TTY (progress bars only
// there), whether colour is allowed (a TTY, NO_COLOR unset or empty, TERM not "dumb"), the
// error line format, and the ANSI colour codes.
//
//   if (StderrIsTty()) DrawBar(...);
//   PrintError("cannot open store: " + message);   // "dtrain: error: cannot open store: ..."
//   std::cout << Paint(ColorOnStdout(), kGreen, "succeeded");
//
// Reads the environment on each call; safe for concurrent use.
#pragma once

#include <string>
#include <string_view>

namespace dtrain::cli {

bool StdoutIsTty();
bool StderrIsTty();
// True when that stream is a TTY, NO_COLOR is unset or empty, and TERM is not "dumb".
bool ColorOnStdout();
bool ColorOnStderr();
void PrintError(std::string_view message);

// SGR codes for Paint.
inline constexpr std::string_view kRed = "31";
inline constexpr std::string_view kGreen = "32";
inline constexpr std::string_view kYellow = "33";
inline constexpr std::string_view kCyan = "36";
inline constexpr std::string_view kBold = "1";
inline constexpr std::string_view kBoldRed = "1;31";

// `text` wrapped in the colour's escape codes when `color` is true, else `text` unchanged.
std::string Paint(bool color, std::string_view sgr, std::string_view text);

}  // namespace dtrain::cli
