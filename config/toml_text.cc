#include "config/toml_text.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <system_error>

namespace dtrain::config {
namespace {

// nan, inf or -inf as TOML spells them; empty for finite values.
std::string NonFinite(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  return "";
}

template <typename T>
std::string Shortest(T value) {
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return ec == std::errc() ? std::string(buffer, end) : std::string("0");
}

template <typename T>
std::string FloatText(T value) {
  if (std::string special = NonFinite(value); !special.empty()) return special;
  std::string text = Shortest(value);
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text;
}

}  // namespace

std::string TomlString(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if ((c >= 0 && c < 0x20) || c == 0x7f) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string TomlFloat(double value) { return FloatText(value); }
std::string TomlFloat(float value) { return FloatText(value); }

std::string PlainNumber(double value) {
  if (std::string special = NonFinite(value); !special.empty()) return special;
  if (value == std::trunc(value) && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<std::int64_t>(value));
  }
  return Shortest(value);
}

void TomlWriter::Comment(std::string_view text) { Line("# " + std::string(text)); }
void TomlWriter::Section(std::string_view name) { Line("\n[" + std::string(name) + "]"); }
void TomlWriter::TableOfArray(std::string_view name) { Line("\n[[" + std::string(name) + "]]"); }
void TomlWriter::String(std::string_view key, std::string_view value) {
  Key(key, TomlString(value));
}
void TomlWriter::Bool(std::string_view key, bool value) { Key(key, value ? "true" : "false"); }
void TomlWriter::Int(std::string_view key, std::int64_t value) { Key(key, std::to_string(value)); }
void TomlWriter::Unsigned(std::string_view key, std::uint64_t value) {
  Key(key, std::to_string(value));
}
void TomlWriter::Float(std::string_view key, float value) { Key(key, TomlFloat(value)); }
void TomlWriter::Double(std::string_view key, double value) { Key(key, TomlFloat(value)); }

void TomlWriter::IntArray(std::string_view key, const std::vector<int>& values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    text += (i > 0 ? ", " : "") + std::to_string(values[i]);
  }
  Key(key, text + "]");
}

void TomlWriter::StringArray(std::string_view key, const std::vector<std::string>& values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    text += (i > 0 ? ", " : "") + TomlString(values[i]);
  }
  Key(key, text + "]");
}

void TomlWriter::Path(std::string_view key, const std::string& path) {
  if (!path.empty()) String(key, path);
}

void TomlWriter::InlineTable(std::string_view key,
                             const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string text = "{ ";
  for (std::size_t i = 0; i < fields.size(); ++i) {
    text += (i > 0 ? ", " : "") + fields[i].first + " = " + fields[i].second;
  }
  Key(key, text + " }");
}

void TomlWriter::Key(std::string_view key, const std::string& value) {
  Line(std::string(key) + " = " + value);
}
void TomlWriter::Line(const std::string& line) { text_ += line + "\n"; }

}  // namespace dtrain::config
