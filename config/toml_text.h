// TOML text shared by the loaders (messages, quoting bare --set words) and the formatters
// (FormatResolvedJob, FormatDaemonConfig): strings that read back byte for byte, numbers that
// read back exactly, and a writer of whole documents.
//
//   TomlString("a\"b");  // "\"a\\\"b\""
//   TomlFloat(0.01f);    // "0.01": shortest text that reads back (as float) as the same value
//   PlainNumber(1e9);    // "1000000000", for messages
//   TomlWriter w;  w.Section("train");  w.Int("epochs", 5);  std::move(w).Take();
//
// The functions are pure: safe for concurrent use. A TomlWriter: one thread at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// Appends comments, [section] headers and `key = value` lines to a TOML document, each value
// in the text above.
class TomlWriter {
 public:
  void Comment(std::string_view text);       // "# text"
  void Section(std::string_view name);       // a blank line, then "[name]"
  void TableOfArray(std::string_view name);  // a blank line, then "[[name]]"
  void String(std::string_view key, std::string_view value);
  void Bool(std::string_view key, bool value);
  void Int(std::string_view key, std::int64_t value);
  void Unsigned(std::string_view key, std::uint64_t value);
  void Float(std::string_view key, float value);
  void Double(std::string_view key, double value);
  void IntArray(std::string_view key, const std::vector<int>& values);
  void StringArray(std::string_view key, const std::vector<std::string>& values);
  // `key = { name = value, ... }`, each value already TOML text, in the order given.
  void InlineTable(std::string_view key,
                   const std::vector<std::pair<std::string, std::string>>& fields);
  // A path; an empty one means "not given" and is left out.
  void Path(std::string_view key, const std::string& path);

  std::string Take() && { return std::move(text_); }

 private:
  void Key(std::string_view key, const std::string& value);
  void Line(const std::string& line);

  std::string text_;
};

}  // namespace dtrain::config
