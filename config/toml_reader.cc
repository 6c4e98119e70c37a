#include "config/toml_reader.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "config/job_memory.h"
#include "config/suggest.h"
#include "core/codec/file_bytes.h"
#include "config/toml_bounds.h"
#include "config/toml_text.h"

namespace dtrain::config::internal {
namespace {

std::vector<std::string_view> SplitChoices(std::string_view choices) {
  std::vector<std::string_view> names;
  while (!choices.empty()) {
    const std::size_t comma = choices.find(", ");
    names.push_back(choices.substr(0, comma));
    choices = comma == std::string_view::npos ? std::string_view() : choices.substr(comma + 2);
  }
  return names;
}

// The hint for an unknown key of `where`: its closest known key, else the section where a key
// of that name belongs, else the list of allowed keys.
std::string UnknownKeyHint(std::string_view key, const TableReader& where,
                           std::span<const TableReader* const> readers) {
  if (const std::string_view close = ClosestName(key, where.known()); !close.empty()) {
    return "did you mean '" + std::string(close) + "'?";
  }
  for (const TableReader* other : readers) {
    if (other != &where && !other->section().empty() && other->Knows(key)) {
      return "did you mean '" + other->Dotted(key) + "'?";
    }
  }
  std::string allowed = "allowed: ";
  for (std::size_t i = 0; i < where.known().size(); ++i) {
    allowed += (i > 0 ? ", " : "") + std::string(where.known()[i]);
  }
  return allowed;
}

}  // namespace

bool FromOverride(const toml::source_region& where) {
  return where.path && *where.path == kOverrideFile;
}

// ---------------------------------------------------------------------------------------------
// Sink

void Sink::InFile(int line, int column, std::string key, std::string message) {
  list_.push_back({file_, line, column, std::move(key), std::move(message)});
}

void Sink::InOverride(std::string key, std::string message) {
  list_.push_back({std::string(kOverrideFile), 0, 0, std::move(key), std::move(message)});
}

void Sink::AtNode(const toml::node& node, std::string key, std::string message) {
  At(node.source(), node.source(), std::move(key), std::move(message));
}

void Sink::AtKey(const toml::key& key, const toml::node& value, std::string dotted,
                 std::string message) {
  At(value.source(), key.source(), std::move(dotted), std::move(message));
}

std::vector<Diagnostic> Sink::Take() && {
  std::stable_sort(list_.begin(), list_.end(), [this](const Diagnostic& a, const Diagnostic& b) {
    const bool a_set = a.file != file_, b_set = b.file != file_;
    if (a_set != b_set) return b_set;
    return a.line != b.line ? a.line < b.line : a.column < b.column;
  });
  return std::move(list_);
}

void Sink::At(const toml::source_region& origin, const toml::source_region& where, std::string key,
              std::string message) {
  if (FromOverride(origin)) {
    InOverride(std::move(key), std::move(message));
  } else {
    InFile(static_cast<int>(where.begin.line), static_cast<int>(where.begin.column), std::move(key),
           std::move(message));
  }
}

// ---------------------------------------------------------------------------------------------
// Values

std::string Describe(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "the string " + TomlString(node.as_string()->get());
    case toml::node_type::integer:
      return "the integer " + std::to_string(node.as_integer()->get());
    case toml::node_type::floating_point:
      return "the float " + PlainNumber(node.as_floating_point()->get());
    case toml::node_type::boolean:
      return std::string("the boolean ") + (node.as_boolean()->get() ? "true" : "false");
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

std::string Interval::Text() const {
  // Appended piece by piece: `"(" + PlainNumber(lo)` trips GCC 12's -Wrestrict.
  std::string text(1, lo_open ? '(' : '[');
  text += PlainNumber(lo);
  text += ", ";
  text += PlainNumber(hi);
  text += hi_open ? ')' : ']';
  return text;
}

std::optional<std::int64_t> IntIn(const toml::node& node, std::int64_t lo, std::int64_t hi,
                                  std::string* problem) {
  const std::string allowed =
      "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got ";
  const toml::value<std::int64_t>* value = node.as_integer();
  if (value == nullptr) {
    *problem = allowed + Describe(node);
    return std::nullopt;
  }
  if (value->get() < lo || value->get() > hi) {
    *problem = allowed + std::to_string(value->get());
    return std::nullopt;
  }
  return value->get();
}

std::optional<double> DoubleIn(const toml::node& node, Interval range, std::string* problem) {
  double given = 0.0;
  if (const auto* integer = node.as_integer()) {
    given = static_cast<double>(integer->get());
  } else if (const auto* floating = node.as_floating_point()) {
    given = floating->get();
  } else {
    *problem = "must be a number in " + range.Text() + ", got " + Describe(node);
    return std::nullopt;
  }
  if (!std::isfinite(given)) {
    *problem = "must be a finite number in " + range.Text() + ", got " + PlainNumber(given);
    return std::nullopt;
  }
  if (!range.Contains(given)) {
    *problem = "must be a number in " + range.Text() + ", got " + PlainNumber(given);
    return std::nullopt;
  }
  return given;
}

// ---------------------------------------------------------------------------------------------
// TableReader

std::string TableReader::Dotted(std::string_view key) const {
  return section_.empty() ? std::string(key) : section_ + "." + std::string(key);
}

Result<std::uint64_t> SizeOf(const toml::node& node) {
  if (const auto* integer = node.as_integer(); integer != nullptr && integer->get() >= 0) {
    return static_cast<std::uint64_t>(integer->get());
  }
  if (const auto* text = node.as_string()) return ParseBytes(text->get());
  return Status::Error("must be a size such as \"4GiB\", \"512 MiB\" or a number of bytes, got " +
                       Describe(node));
}

const toml::node* TableReader::Find(std::string_view key) {
  if (!Knows(key)) known_.push_back(key);
  return table_ != nullptr ? table_->get(key) : nullptr;
}

const toml::node* TableReader::Bool(std::string_view key, bool* out) {
  const toml::node* node = Find(key);
  if (node == nullptr) return nullptr;
  if (!node->is_boolean()) {
    return Report(*node, key, "must be true or false, got " + Describe(*node));
  }
  *out = node->as_boolean()->get();
  return node;
}

const toml::node* TableReader::Size(std::string_view key, std::uint64_t lo, std::uint64_t hi,
                                   std::uint64_t* out) {
  const toml::node* node = Find(key);
  if (node == nullptr) return nullptr;
  Result<std::uint64_t> bytes = SizeOf(*node);
  if (!bytes.ok()) return Report(*node, key, bytes.status().message());
  if (bytes.value() < lo || bytes.value() > hi) {
    return Report(*node, key,
                  "must be from " + FormatBytes(lo) + " to " + FormatBytes(hi) + ", got " +
                      FormatBytes(bytes.value()));
  }
  *out = bytes.value();
  return node;
}

const toml::node* TableReader::String(std::string_view key, std::string* out) {
  const toml::node* node = Find(key);
  if (node == nullptr) return nullptr;
  if (!node->is_string()) return Report(*node, key, "must be a string, got " + Describe(*node));
  *out = node->as_string()->get();
  return node;
}

const toml::node* TableReader::OneOf(std::string_view key, std::string_view choices,
                                     std::string* out) {
  const toml::node* node = Find(key);
  if (node == nullptr) return nullptr;
  if (node->is_string()) {
    const std::string& name = node->as_string()->get();
    const std::vector<std::string_view> names = SplitChoices(choices);
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      *out = name;
      return node;
    }
  }
  return ReportChoice(*node, key, choices);
}

const toml::node* TableReader::ReportChoice(const toml::node& node, std::string_view key,
                                            std::string_view choices) {
  std::string message = "must be one of: " + std::string(choices) + "; got ";
  if (!node.is_string()) return Report(node, key, message + Describe(node));
  const std::string& name = node.as_string()->get();
  message += TomlString(name);
  if (const std::string_view close = ClosestName(name, SplitChoices(choices)); !close.empty()) {
    message += " (did you mean \"" + std::string(close) + "\"?)";
  }
  return Report(node, key, std::move(message));
}

const toml::node* TableReader::Report(const toml::node& node, std::string_view key,
                                      std::string message) {
  if (!Failed(key)) failed_.push_back(key);
  sink_.AtNode(node, Dotted(key), std::move(message));
  return nullptr;
}

void TableReader::Missing(std::string_view key, std::string message) {
  if (table_ != nullptr) {
    sink_.AtNode(*table_, Dotted(key), std::move(message));
  } else {
    sink_.InFile(0, 0, Dotted(key), std::move(message));
  }
}

bool TableReader::Contains(const std::vector<std::string_view>& list, std::string_view key) {
  return std::find(list.begin(), list.end(), key) != list.end();
}

// ---------------------------------------------------------------------------------------------
// Documents

const toml::table* SectionTable(TableReader& top, std::string_view name) {
  const toml::node* node = top.Find(name);
  if (node == nullptr) return nullptr;
  if (!node->is_table()) {
    top.Report(*node, name,
               "must be a table ([" + std::string(name) + "]), got " + Describe(*node));
    return nullptr;
  }
  return node->as_table();
}

void RejectUnknown(std::span<const TableReader* const> readers, Sink& sink) {
  for (const TableReader* r : readers) {
    if (r->table() == nullptr) continue;
    for (auto&& [key, node] : *r->table()) {
      if (r->Knows(key.str())) continue;
      const bool section = r->section().empty() && node.is_table();
      sink.AtKey(key, node, r->Dotted(key.str()),
                 std::string(section ? "unknown section; " : "unknown key; ") +
                     UnknownKeyHint(key.str(), *r, readers));
    }
  }
}

const toml::node* ReadStrings(TableReader& r, std::string_view key, std::string_view item,
                              std::string_view shape, std::string (*problem)(const std::string&),
                              std::vector<std::string>* out) {
  const toml::node* node = r.Find(key);
  if (node == nullptr) return nullptr;
  const toml::array* list = node->as_array();
  if (list == nullptr) {
    return r.Report(*node, key, "must be an array of " + std::string(shape) + " strings");
  }
  std::vector<std::string> found;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const toml::node& entry = (*list)[i];
    const std::string number = std::string(item) + " " + std::to_string(i + 1) + " ";
    if (!entry.is_string()) {
      r.Report(entry, key, number + "must be a " + std::string(shape) + " string");
      continue;
    }
    std::string text(entry.as_string()->get());
    if (std::string why = problem(text); !why.empty()) {
      r.Report(entry, key, number + why);
    } else {
      found.push_back(std::move(text));
    }
  }
  if (r.Failed(key)) return nullptr;
  *out = std::move(found);
  return node;
}

const toml::node* ReadMemorySize(TableReader& r, std::string_view key, std::uint64_t* out) {
  const toml::node* node = r.Find(key);
  if (node == nullptr) return nullptr;
  Result<std::uint64_t> bytes = SizeOf(*node);
  if (!bytes.ok()) return r.Report(*node, key, bytes.status().message());
  if (bytes.value() != 0 && bytes.value() < kMinMemoryLimit) {
    return r.Report(*node, key,
                    "must be 0 (no limit) or at least " + FormatBytes(kMinMemoryLimit) + ", got " +
                        FormatBytes(bytes.value()));
  }
  *out = bytes.value();
  return node;
}

std::optional<toml::table> ParseToml(std::string_view text, std::string_view source,
                                     SyntaxError* error) {
  if (std::optional<TomlBoundsError> beyond = CheckTomlBounds(text)) {
    *error = {beyond->line, beyond->column, std::move(beyond->description), true};
    return std::nullopt;
  }
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    *error = {static_cast<int>(e.source().begin.line), static_cast<int>(e.source().begin.column),
              std::string(e.description())};
    return std::nullopt;
  }
}

std::optional<toml::table> ParseDocument(std::string_view text, const std::string& display_path,
                                         Sink& sink) {
  SyntaxError error;
  std::optional<toml::table> root = ParseToml(text, display_path, &error);
  if (!root) {
    sink.InFile(error.line, error.column, "",
                (error.out_of_bounds ? "" : "TOML syntax error: ") + error.description);
  }
  return root;
}

bool ReadWholeFile(const std::string& path, std::string_view what, std::string* text,
                   std::string* problem) {
  Result<std::string> bytes = codec::ReadFileBytes(path, kMaxTomlBytes);
  if (!bytes.ok()) {
    // ReadFileBytes says "PATH: [cannot open: ]why"; the diagnostic names the file already.
    std::string reason = bytes.status().message();
    for (const std::string& prefix : {path + ": ", std::string("cannot open: ")}) {
      if (reason.starts_with(prefix)) reason.erase(0, prefix.size());
    }
    *problem = "cannot read " + std::string(what) + ": " + reason;
    return false;
  }
  *text = std::move(bytes).value();
  return true;
}

}  // namespace dtrain::config::internal
