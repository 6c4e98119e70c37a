// TOML value text shared by the job loader (messages, quoting bare --set words) and
// FormatResolvedJob: strings that read back byte for byte, numbers that read back exactly.
//
//   TomlString("a\"b");  // "\"a\\\"b\""
//   TomlFloat(0.01f);    // "0.01": shortest text that reads back (as float) as the same value
//   PlainNumber(1e9);    // "1000000000", for messages
//
// Pure functions: safe for concurrent use.
#pragma once

#include <string>
#include <string_view>

namespace dtrain::config {

// A TOML basic string: quotes, backslashes and control characters escaped.
std::string TomlString(std::string_view text);

// A TOML float: the shortest text that parses back to `value` (for the float overload: whose
// double rounds back to `value`), always with a '.' or an exponent; "nan", "inf", "-inf".
std::string TomlFloat(double value);
std::string TomlFloat(float value);

// A number for messages: integral values without a fraction ("0", "1000000000"), others as
// their shortest text ("0.9", "1e-08"), non-finite ones as "nan", "inf", "-inf".
std::string PlainNumber(double value);

}  // namespace dtrain::config
