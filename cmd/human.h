// Times, durations and sizes as people read them, for the human (non --json) output.
//
//   FormatDuration(312.4);                 // "5m12s"
//   FormatLocalTime(1764511392.0);         // "2025-11-30 14:03:12" in the local time zone
//   FormatAge(then, now);                  // "5m ago"
//   FormatBytes(3145728);                  // "3.0 MiB"
//   FormatMetric("peak_rss_bytes", 9.4e7); // "89.6 MiB"
//   ParseTimePoint("10m", now);            // now - 600
//
// Pure functions (FormatLocalTime reads the time zone): safe for concurrent use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dtrain::cli {

// "12s", "5m12s", "3h05m"; "--" for a negative or non-finite value.
std::string FormatDuration(double seconds);
// Seconds since the Unix epoch as "YYYY-MM-DD HH:MM:SS" local time; "-" for 0 or less.
std::string FormatLocalTime(double unix_seconds);
// How long before `now` (both Unix seconds): "just now", "42s ago", "5m ago", "3h ago",
// "2d ago"; "-" when `then` is 0 or less.
std::string FormatAge(double then, double now);
// The current wall-clock time in Unix seconds.
double UnixNow();
// "512 B", "12.5 KiB", "3.0 MiB", "1.2 GiB".
std::string FormatBytes(std::int64_t bytes);
// A metric's value as people read it, by the words of its name: bytes (peak_rss_bytes,
// bytes_sent) as FormatBytes ("90.1 MiB"), seconds with " s", everything in plain notation ("13292", "0.8777", "94449700"), never
// "9.44497e+07"; only values under 1e-4 or from 1e15 keep an exponent ("1e-05", "3.142e+57");
// "nan", "inf", "-inf" as such.
std::string FormatMetric(std::string_view name, double value);
// A point in time as Unix seconds, given as a duration before `now` ("90s", "10m", "2h",
// "1d"), a local date and time ("2026-11-30", "2026-11-30 14:05", "2026-11-30T14:05:10") or
// Unix seconds ("1764511392"); nullopt for anything else.
std::optional<double> ParseTimePoint(std::string_view text, double now);

}  // namespace dtrain::cli
