#include "cmd/human.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string>

namespace dtrain::cli {

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--";
  const auto s = static_cast<long>(seconds + 0.5);
  char out[32];
  if (s >= 3600) {
    std::snprintf(out, sizeof out, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  } else if (s >= 60) {
    std::snprintf(out, sizeof out, "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(out, sizeof out, "%lds", s);
  }
  return out;
}

std::string FormatLocalTime(double unix_seconds) {
  if (!(unix_seconds > 0) || !std::isfinite(unix_seconds)) return "-";
  const auto t = static_cast<std::time_t>(unix_seconds);
  std::tm local{};
  if (::localtime_r(&t, &local) == nullptr) return "-";
  char out[32];
  std::strftime(out, sizeof out, "%Y-%m-%d %H:%M:%S", &local);
  return out;
}

std::string FormatAge(double then, double now) {
  if (!(then > 0) || !std::isfinite(then)) return "-";
  const double age = std::max(0.0, now - then);
  char out[32];
  if (age < 1) return "just now";
  if (age < 60) {
    std::snprintf(out, sizeof out, "%.0fs ago", std::floor(age));
  } else if (age < 3600) {
    std::snprintf(out, sizeof out, "%.0fm ago", std::floor(age / 60));
  } else if (age < 86400) {
    std::snprintf(out, sizeof out, "%.0fh ago", std::floor(age / 3600));
  } else {
    std::snprintf(out, sizeof out, "%.0fd ago", std::floor(age / 86400));
  }
  return out;
}

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string FormatBytes(std::int64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  int unit = 0;
  while (value >= 1024.0 && unit < 3) {
    value /= 1024.0;
    ++unit;
  }
  char out[32];
  std::snprintf(out, sizeof out, "%.1f %s", value, units[unit]);
  return out;
}

std::string FormatMetric(std::string_view name, double value) {
  const auto has_word = [name](std::string_view word) {  // a '_'-separated word of the name
    for (std::size_t at = name.find(word); at != std::string_view::npos;
         at = name.find(word, at + 1)) {
      const std::size_t end = at + word.size();
      if ((at == 0 || name[at - 1] == '_') && (end == name.size() || name[end] == '_')) {
        return true;
      }
    }
    return false;
  };
  if (has_word("bytes") && std::isfinite(value) && value >= 0.0) {
    return FormatBytes(std::llround(value));
  }
  char out[64];
  const double size = std::fabs(value);
  if (size != 0.0 && size < 1e-4) {
    std::snprintf(out, sizeof out, "%.3g", value);
  } else if (size >= 1e5 && size < 1e15) {
    std::snprintf(out, sizeof out, "%.0f", value);  // counts, samples/s: every digit
  } else if (size >= 1e15 && std::isfinite(value)) {
    std::snprintf(out, sizeof out, "%.4g", value);  // a diverging loss, not a 58-digit integer
  } else {
    std::snprintf(out, sizeof out, "%.6g", value);  // no exponent between 1e-4 and 1e5
  }
  return std::string(out) + (has_word("seconds") ? " s" : "");
}

std::optional<double> ParseTimePoint(std::string_view text, double now) {
  // Unix seconds, or a duration: a number, then an optional unit.
  double value = 0;
  const auto [rest, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error == std::errc() && value >= 0 && std::isfinite(value)) {
    const std::string_view unit(rest, static_cast<std::size_t>(text.data() + text.size() - rest));
    if (unit.empty()) return value;
    const double scale = unit == "s"   ? 1
                         : unit == "m" ? 60
                         : unit == "h" ? 3600
                         : unit == "d" ? 86400
                                       : 0;
    if (scale > 0) return now - value * scale;
  }
  const std::string s(text);
  for (const char* format :
       {"%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d"}) {
    std::tm local{};
    const char* end = ::strptime(s.c_str(), format, &local);
    if (end == nullptr || *end != '\0') continue;
    local.tm_isdst = -1;
    const std::time_t t = std::mktime(&local);
    if (t == static_cast<std::time_t>(-1)) return std::nullopt;
    return static_cast<double>(t);
  }
  return std::nullopt;
}

}  // namespace dtrain::cli
