// Reading a parsed TOML document into plain structs with diagnostics: the machinery shared by
// the job-file loader (job_file.cc) and the daemon-configuration loader (daemon_config.cc).
//
//   Sink sink("dtraind.toml");
//   TableReader top(&root, "", sink);
//   TableReader daemon(SectionTable(top, "daemon"), "daemon", sink);
//   daemon.Int("max_jobs", 1, 1024, &config.max_jobs);  // reports a bad value, keeps the default
//   const TableReader* const readers[] = {&top, &daemon};
//   RejectUnknown(readers, sink);                        // every key nobody asked for
//   std::vector<Diagnostic> problems = std::move(sink).Take();
//
// Internal to the dtrain_config library: only config/*.cc include it, so toml++ stays out of
// every public header (the library links it privately). Values that came from a --set override
// carry the source path "--set"; the Sink reports them there instead of at a line. The parsing
// functions turn toml++'s exceptions into values; everything else here throws only what
// allocation throws, which Guarded turns into a diagnostic at the public edge. One thread at a
// time per Sink and TableReader; the free functions share no state.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/job.h"
#include "config/toml_text.h"
#include "core/status.h"

namespace dtrain::config::internal {

// The diagnostic file name of --set overrides, and the source path their nodes carry.
inline constexpr std::string_view kOverrideFile = "--set";

// Whether a node at `where` was supplied by a --set override.
bool FromOverride(const toml::source_region& where);

// The diagnostics of one load: the file's, then the overrides'.
class Sink {
 public:
  explicit Sink(std::string file) : file_(std::move(file)) {}

  void InFile(int line, int column, std::string key, std::string message);
  void InOverride(std::string key, std::string message);
  // At a value or table: its position in the file, or "--set" when an override supplied it.
  void AtNode(const toml::node& node, std::string key, std::string message);
  // At a key's position. Whether it came from an override is told by its value, whose source
  // region moves with it when an override is merged into the file's table.
  void AtKey(const toml::key& key, const toml::node& value, std::string dotted,
             std::string message);

  std::size_t size() const { return list_.size(); }

  // The file's diagnostics by line, then column; the overrides' after them, in order given.
  std::vector<Diagnostic> Take() &&;

 private:
  void At(const toml::source_region& origin, const toml::source_region& where, std::string key,
          std::string message);

  std::string file_;
  std::vector<Diagnostic> list_;
};

// "the string \"64\"", "the float 1.5", "a table": what a value is, for messages.
std::string Describe(const toml::node& node);

// An interval of real numbers, such as (0, 1000] for a learning rate.
struct Interval {
  double lo = 0.0, hi = 0.0;
  bool lo_open = false, hi_open = false;

  bool Contains(double v) const {  // false for nan
    return (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
  }
  std::string Text() const;  // "(0, 1000]"
};
inline Interval Closed(double lo, double hi) { return {lo, hi, false, false}; }
inline Interval OpenClosed(double lo, double hi) { return {lo, hi, true, false}; }  // (lo, hi]
inline Interval ClosedOpen(double lo, double hi) { return {lo, hi, false, true}; }  // [lo, hi)

// The value of an integer node within [lo, hi], or nothing and *problem says why.
std::optional<std::int64_t> IntIn(const toml::node& node, std::int64_t lo, std::int64_t hi,
                                  std::string* problem);

// The value of a number node (integers are numbers) within `range`, or nothing and *problem
// says why (a non-number, nan and the infinities included).
std::optional<double> DoubleIn(const toml::node& node, Interval range, std::string* problem);

// The value of a number node within `range` once stored as a T (float or double), or nothing
// and *problem says why (including a value that single precision rounds out of the range).
template <typename T>
std::optional<T> NumberIn(const toml::node& node, Interval range, std::string* problem) {
  const std::optional<double> given = DoubleIn(node, range, problem);
  if (!given) return std::nullopt;
  const T stored = static_cast<T>(*given);
  if (!range.Contains(static_cast<double>(stored))) {
    *problem = "must be a number in " + range.Text() + ", got " + PlainNumber(*given) +
               ", which single precision rounds to " + PlainNumber(static_cast<double>(stored));
    return std::nullopt;
  }
  return stored;
}

// A size in bytes: a non-negative integer, or a string ParseBytes reads ("4GiB", "512 MiB"); an
// error says what is wrong.
Result<std::uint64_t> SizeOf(const toml::node& node);

// Reads one table of a document: the top level (section "") or a section such as [train].
// Every key asked for is registered as known, so RejectUnknown can name the others; the section
// may be absent (null), and then every read finds nothing. A typed read assigns a present, valid
// value and returns its node; it reports a present, invalid one (the key then counts as failed)
// and returns null; it returns null for an absent key and leaves the output alone. Key names
// must be string literals (they are kept as views).
class TableReader {
 public:
  TableReader(const toml::table* table, std::string section, Sink& sink)
      : table_(table), section_(std::move(section)), sink_(sink) {}

  const toml::table* table() const { return table_; }
  const std::string& section() const { return section_; }
  std::span<const std::string_view> known() const { return known_; }
  bool Knows(std::string_view key) const { return Contains(known_, key); }
  bool Failed(std::string_view key) const { return Contains(failed_, key); }
  bool Present(std::string_view key) const { return table_ != nullptr && table_->contains(key); }
  std::string Dotted(std::string_view key) const;

  // The node of `key`, or null; registers the key as known.
  const toml::node* Find(std::string_view key);

  template <typename T>
  const toml::node* Int(std::string_view key, std::int64_t lo, std::int64_t hi, T* out) {
    const toml::node* node = Find(key);
    if (node == nullptr) return nullptr;
    std::string problem;
    const std::optional<std::int64_t> value = IntIn(*node, lo, hi, &problem);
    if (!value) return Report(*node, key, std::move(problem));
    *out = static_cast<T>(*value);
    return node;
  }

  template <typename T>
  const toml::node* Number(std::string_view key, Interval range, T* out) {
    const toml::node* node = Find(key);
    if (node == nullptr) return nullptr;
    std::string problem;
    const std::optional<T> value = NumberIn<T>(*node, range, &problem);
    if (!value) return Report(*node, key, std::move(problem));
    *out = *value;
    return node;
  }

  const toml::node* Bool(std::string_view key, bool* out);
  const toml::node* String(std::string_view key, std::string* out);
  // A size (SizeOf) in [lo, hi] bytes.
  const toml::node* Size(std::string_view key, std::uint64_t lo, std::uint64_t hi,
                         std::uint64_t* out);

  // A string that is one of `choices` (names joined by ", "), stored as is.
  const toml::node* OneOf(std::string_view key, std::string_view choices, std::string* out);

  // A name from `choices` (as listed by the engine's *Choices()), turned into E by `parse`.
  template <typename E>
  const toml::node* Enum(std::string_view key, Result<E> (*parse)(std::string_view),
                         std::string_view choices, E* out) {
    const toml::node* node = Find(key);
    if (node == nullptr) return nullptr;
    if (node->is_string()) {
      Result<E> value = parse(node->as_string()->get());
      if (value.ok()) {
        *out = value.value();
        return node;
      }
    }
    return ReportChoice(*node, key, choices);
  }

  // Reports a problem with the value of `key` (which then counts as failed); returns null.
  const toml::node* Report(const toml::node& node, std::string_view key, std::string message);

  // Reports a required key that is absent: at the section's header, or at line 0 of the file
  // when the whole section is missing.
  void Missing(std::string_view key, std::string message);

 private:
  static bool Contains(const std::vector<std::string_view>& list, std::string_view key);
  // Reports a value that is not one of `choices`, with the closest choice when one is close.
  const toml::node* ReportChoice(const toml::node& node, std::string_view key,
                                 std::string_view choices);

  const toml::table* table_;  // in the document the caller keeps alive; null: section absent
  std::string section_;
  Sink& sink_;
  std::vector<std::string_view> known_;   // the keys asked for: literals, static storage
  std::vector<std::string_view> failed_;  // the keys whose values were reported
};

// The section table `name` of the top level, or null (reported when present but no table).
const toml::table* SectionTable(TableReader& top, std::string_view name);

// Reports every key of every reader's table that its reader did not ask for, with the closest
// known key, else the section where a key of that name belongs, else the list of allowed keys.
void RejectUnknown(std::span<const TableReader* const> readers, Sink& sink);

// An array of strings at `key`, each called "<item> N" in messages, shaped as `shape` says and
// checked by `problem` (empty: fine). The node, or nullptr when absent or reported (then `out`
// is left as it was).
const toml::node* ReadStrings(TableReader& r, std::string_view key, std::string_view item,
                              std::string_view shape, std::string (*problem)(const std::string&),
                              std::vector<std::string>* out);

// A memory size at `key` (train.memory_limit, [limits]' memory keys): 0 (none), a number of
// bytes, or a size with a unit ("4GiB"); else at least kMinMemoryLimit. The node, or nullptr
// when absent or reported.
const toml::node* ReadMemorySize(TableReader& r, std::string_view key, std::uint64_t* out);

// Where and why toml++ stopped, or which of CheckTomlBounds' bounds the text broke.
struct SyntaxError {
  int line = 0, column = 0;
  std::string description;
  bool out_of_bounds = false;  // the text never reached toml++ (config/toml_bounds.h)
};

// `text` parsed, its nodes carrying `source` as their path; or nothing and *error says why. A
// text beyond CheckTomlBounds' bounds is refused before toml++ sees it.
std::optional<toml::table> ParseToml(std::string_view text, std::string_view source,
                                     SyntaxError* error);

// The document `text`, named `display_path`; or nothing, and its syntax error reported to
// `sink` at the place where toml++ stopped.
std::optional<toml::table> ParseDocument(std::string_view text, const std::string& display_path,
                                         Sink& sink);

// The whole file at `path`, or false and *problem says why ("cannot read <what>: ...").
bool ReadWholeFile(const std::string& path, std::string_view what, std::string* text,
                   std::string* problem);

// Runs `load`, turning any exception (an allocation failure) into the one diagnostic of an
// R (a {std::optional<...>, std::vector<Diagnostic>} result) on `file`.
template <typename R, typename F>
R Guarded(const std::string& file, F&& load) {
  try {
    return load();
  } catch (const std::exception& e) {
    return {std::nullopt, {Diagnostic{file, 0, 0, "", std::string("internal error: ") + e.what()}}};
  }
}

}  // namespace dtrain::config::internal
