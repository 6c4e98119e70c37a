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

// The length of the well-formed UTF-8 sequence `text` starts with (2 to 4 bytes: no overlong
// forms, surrogates or code points past U+10FFFF), or 0 when it starts with none.
std::size_t Utf8Length(std::string_view text) {
  const auto byte = [&text](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the second byte's range
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;
    if (lead == 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (text.size() < length || byte(1) < low || byte(1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  }
  return length;
}

}  // namespace

bool StdoutIsTty() { return ::isatty(STDOUT_FILENO) == 1; }
bool StderrIsTty() { return ::isatty(STDERR_FILENO) == 1; }

bool ColorOnStdout() { return ColorAllowed(StdoutIsTty()); }
bool ColorOnStderr() { return ColorAllowed(StderrIsTty()); }

void PrintError(std::string_view message) {
  std::cerr << "dtrain: " << Paint(ColorOnStderr(), kBoldRed, "error:") << ' '
            << Printable(message, Newlines::kKeepNewlines) << '\n';
}

std::string Printable(std::string_view text, Newlines newlines) {
  std::string out;
  out.reserve(text.size());
  const auto hex = [&out](const char* prefix, unsigned value) {
    static constexpr char kDigits[] = "0123456789abcdef";
    out += prefix;
    out += kDigits[(value >> 4) & 0xf];
    out += kDigits[value & 0xf];
  };
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      const bool kept = c == '\t' || (c == '\n' && newlines == Newlines::kKeepNewlines);
      if ((c < 0x20 || c == 0x7f) && !kept) {
        hex("\\x", c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    const std::size_t length = Utf8Length(text.substr(i));
    if (length == 0) {
      hex("\\x", c);
      ++i;
    } else if (length == 2 && c == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0) {
      hex("\\u00", static_cast<unsigned char>(text[i + 1]));  // U+0080..U+009F: C1 controls
      i += 2;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

std::string Paint(bool color, std::string_view sgr, std::string_view text) {
  if (!color) return std::string(text);
  return "\033[" + std::string(sgr) + "m" + std::string(text) + "\033[0m";
}

}  // namespace dtrain::cli
