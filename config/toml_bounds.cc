#include "config/toml_bounds.h"

#include <vector>

namespace dtrain::config {
namespace {

// Where the scanner stands in TOML's grammar, as far as the bounds need it.
enum class Context {
  kLineStart,  // a top-level line before its first token
  kHeader,     // inside [a.b.c] or [[a.b.c]]
  kKey,        // a key, before its '=' (top level, or in an inline table)
  kValue,      // after '=', or inside an array
};

class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  std::optional<TomlBoundsError> Run() {
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == '\n') {
        if (open_.empty()) context_ = Context::kLineStart;
        NextLine();
        continue;
      }
      if (c == '#') {
        while (at_ < text_.size() && text_[at_] != '\n') ++at_;
        continue;
      }
      if (c == '"' || c == '\'') {
        if (context_ == Context::kLineStart) StartKey();
        SkipString(c);
        continue;
      }
      if (std::optional<TomlBoundsError> e = Token(c)) return e;
      ++at_;
    }
    return std::nullopt;
  }

 private:
  // One character outside strings and comments; an error where it breaks a bound.
  std::optional<TomlBoundsError> Token(char c) {
    switch (context_) {
      case Context::kLineStart:
        if (c == ' ' || c == '\t' || c == '\r') return std::nullopt;
        if (c == '[') {
          context_ = Context::kHeader;
          parts_ = 1;
          if (at_ + 1 < text_.size() && text_[at_ + 1] == '[') ++at_;
          return std::nullopt;
        }
        StartKey();
        return Token(c);
      case Context::kHeader:
        if (c == '.') return AnotherPart("a table header");
        if (c == ']') context_ = Context::kValue;  // the rest of the line: ']' or a comment
        return std::nullopt;
      case Context::kKey:
        if (c == '.') return AnotherPart("a dotted key");
        if (c == '=') context_ = Context::kValue;
        if (c == '}') Close();  // {} : an empty inline table
        return std::nullopt;
      case Context::kValue:
        if (c == '[' || c == '{') {
          open_.push_back(c);
          if (static_cast<int>(open_.size()) > kMaxTomlNesting) {
            return Error("arrays and inline tables nest more than " +
                         std::to_string(kMaxTomlNesting) + " deep");
          }
          if (c == '{') StartKey();
        } else if (c == ']' || c == '}') {
          Close();
        } else if (c == ',' && !open_.empty() && open_.back() == '{') {
          StartKey();
        }
        return std::nullopt;
    }
    return std::nullopt;
  }

  void StartKey() {
    context_ = Context::kKey;
    parts_ = 1;
  }

  void Close() {
    if (!open_.empty()) open_.pop_back();
    context_ = Context::kValue;
  }

  std::optional<TomlBoundsError> AnotherPart(const char* what) {
    if (++parts_ <= kMaxTomlKeyParts) return std::nullopt;
    return Error(std::string(what) + " has more than " + std::to_string(kMaxTomlKeyParts) +
                 " parts");
  }

  TomlBoundsError Error(std::string description) const {
    return {line_, static_cast<int>(at_ - line_start_) + 1,
            std::move(description) + "; dtrain reads no deeper TOML"};
  }

  void NextLine() {
    ++at_;
    ++line_;
    line_start_ = at_;
  }

  // Past the string that opens at at_ with `quote` (basic or literal, one line or multi-line).
  void SkipString(char quote) {
    const bool multi = text_.substr(at_, 3) == std::string_view(quote == '"' ? "\"\"\"" : "'''");
    at_ += multi ? 3 : 1;
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == '\n') {
        if (!multi) return;  // unterminated: the parser says so
        NextLine();
        continue;
      }
      if (c == '\\' && quote == '"' && at_ + 1 < text_.size()) {
        ++at_;
        if (text_[at_] == '\n') {
          NextLine();
        } else {
          ++at_;
        }
        continue;
      }
      if (c != quote) {
        ++at_;
        continue;
      }
      if (!multi) {
        ++at_;
        return;
      }
      if (text_.substr(at_, 3) == std::string_view(quote == '"' ? "\"\"\"" : "'''")) {
        at_ += 3;
        // Up to two more quotes belong to the string's content ("""a"""" ends with a quote).
        for (int extra = 0; extra < 2 && at_ < text_.size() && text_[at_] == quote; ++extra) ++at_;
        return;
      }
      ++at_;
    }
  }

  std::string_view text_;
  std::size_t at_ = 0;
  std::size_t line_start_ = 0;
  int line_ = 1;
  Context context_ = Context::kLineStart;
  int parts_ = 0;
  std::vector<char> open_;  // '[' and '{' not yet closed, innermost last
};

}  // namespace

std::optional<TomlBoundsError> CheckTomlBounds(std::string_view text) {
  if (text.size() > kMaxTomlBytes) {
    return TomlBoundsError{0, 0,
                           "the text is " + std::to_string(text.size()) + " bytes, more than the " +
                               std::to_string(kMaxTomlBytes) + " (1 MiB) dtrain reads as TOML"};
  }
  return Scanner(text).Run();
}

}  // namespace dtrain::config
