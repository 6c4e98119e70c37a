// Terminal habits shared by every subcommand: whether a stream is a TTY (progress bars only
// there), whether colour is allowed (a TTY, NO_COLOR unset or empty, TERM not "dumb"), the
// error line format, the ANSI colour codes, and text that cannot act on a terminal.
//
//   if (StderrIsTty()) DrawBar(...);
//   PrintError("cannot open store: " + message);   // "dtrain: error: cannot open store: ..."
//   std::cout << Paint(ColorOnStdout(), kGreen, "succeeded");
//   std::cout << Printable(job_reason);             // "\x1b[2J" instead of a cleared screen
//
// Text that another user may have written (a job's reason quoting a data path, its name, a
// worker's log line, a daemon's error) reaches the screen through Printable or PrintError only.
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
// "dtrain: error: MESSAGE" on stderr; the message as Printable(message, kKeepNewlines).
void PrintError(std::string_view message);

// `text` with every byte or character that a terminal would act on written out instead: C0
// controls and DEL as \xNN (\t stays; \n stays only with kKeepNewlines), the C1 controls
// U+0080..U+009F as \u00NN, and bytes that are not UTF-8 as \xNN. Backslashes are kept as
// they are, so well-formed text without controls prints byte for byte.
enum class Newlines { kEscape, kKeepNewlines };
std::string Printable(std::string_view text, Newlines newlines = Newlines::kEscape);

// SGR codes for Paint.
inline constexpr std::string_view kRed = "31";
inline constexpr std::string_view kGreen = "32";
inline constexpr std::string_view kYellow = "33";
inline constexpr std::string_view kBlue = "34";
inline constexpr std::string_view kMagenta = "35";
inline constexpr std::string_view kCyan = "36";
inline constexpr std::string_view kBold = "1";
inline constexpr std::string_view kBoldRed = "1;31";

// `text` wrapped in the colour's escape codes when `color` is true, else `text` unchanged.
std::string Paint(bool color, std::string_view sgr, std::string_view text);

}  // namespace dtrain::cli
