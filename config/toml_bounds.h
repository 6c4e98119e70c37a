// The bounds a TOML text must keep before it reaches the parser: its size, the parts of any one
// dotted key or table header, and how deep arrays and inline tables nest. toml++ parses dotted
// keys and headers recursively with no limit of its own, so a key of 40,000 parts overflows the
// stack of whoever parses it (the CLI, or the root daemon parsing a submitted job); every text
// that dtrain parses as TOML passes this check first (ParseToml).
//
//   std::optional<TomlBoundsError> e = CheckTomlBounds(text);   // nullopt: within the bounds
//
// The scan is lexical (strings, comments, keys, values, brackets) and linear in the text. It only
// rejects: a text within the bounds that is not valid TOML is left for the parser to explain. The
// bounds are generous for any job or daemon file (man/dtrain-job.toml.5, "Limits"). Pure function.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace dtrain::config {

inline constexpr std::size_t kMaxTomlBytes = 1u << 20;  // 1 MiB
inline constexpr int kMaxTomlKeyParts = 32;              // a.b.c... or [a.b.c...]
inline constexpr int kMaxTomlNesting = 32;               // [[[...]]] and {a = {b = ...}}

// Where the text first leaves its bounds (1-based line and column) and which bound it broke.
struct TomlBoundsError {
  int line = 0, column = 0;
  std::string description;
};

std::optional<TomlBoundsError> CheckTomlBounds(std::string_view text);

}  // namespace dtrain::config
