#include "config/job_file.h"

#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "config/suggest.h"
#include "config/toml_text.h"
#include "core/data/readers.h"

namespace dtrain::config {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kOverrideFile = "--set";

// Upper limits far beyond any sensible job: they catch a typo (three digits too many) at load
// time instead of as an allocation failure or a run that never ends.
constexpr std::int64_t kMaxLayerWidth = 1 << 24;  // the engine's own limit (core/model/spec.cc)
constexpr std::size_t kMaxHiddenLayers = 64;
constexpr std::int64_t kMaxEpochs = 1'000'000;
constexpr std::int64_t kMaxSteps = 10'000'000'000;
constexpr std::int64_t kMaxBatchSize = 1 << 20;
constexpr std::int64_t kMaxRows = 100'000'000;
constexpr std::int64_t kMaxClasses = 1 << 16;
constexpr std::int64_t kMaxThreads = 1024;
constexpr std::int64_t kMaxWorkers = 1024;
constexpr std::int64_t kMaxKeep = 10'000;
constexpr std::int64_t kMaxSeed = std::numeric_limits<std::int64_t>::max();
constexpr std::size_t kMaxNameLength = 64;

// ---------------------------------------------------------------------------------------------
// Diagnostics with places.

bool FromOverride(const toml::source_region& where) {
  return where.path && *where.path == kOverrideFile;
}

// The diagnostics of one load: the job file's, then the overrides'.
class Sink {
 public:
  explicit Sink(std::string file) : file_(std::move(file)) {}

  void InFile(int line, int column, std::string key, std::string message) {
    list_.push_back({file_, line, column, std::move(key), std::move(message)});
  }
  void InOverride(std::string key, std::string message) {
    list_.push_back({std::string(kOverrideFile), 0, 0, std::move(key), std::move(message)});
  }
  // At a value or table: its position in the file, or "--set" when an override supplied it.
  void AtNode(const toml::node& node, std::string key, std::string message) {
    At(node.source(), node.source(), std::move(key), std::move(message));
  }
  // At a key's position. Whether it came from an override is told by its value, whose source
  // region moves with it when an override is merged into the file's table.
  void AtKey(const toml::key& key, const toml::node& value, std::string dotted,
             std::string message) {
    At(value.source(), key.source(), std::move(dotted), std::move(message));
  }

  std::size_t size() const { return list_.size(); }

  std::vector<Diagnostic> Take() && {
    std::stable_sort(list_.begin(), list_.end(), [this](const Diagnostic& a, const Diagnostic& b) {
      const bool a_set = a.file != file_, b_set = b.file != file_;
      if (a_set != b_set) return b_set;
      return a.line != b.line ? a.line < b.line : a.column < b.column;
    });
    return std::move(list_);
  }

 private:
  void At(const toml::source_region& origin, const toml::source_region& where, std::string key,
          std::string message) {
    if (FromOverride(origin)) {
      InOverride(std::move(key), std::move(message));
    } else {
      InFile(static_cast<int>(where.begin.line), static_cast<int>(where.begin.column),
             std::move(key), std::move(message));
    }
  }

  std::string file_;
  std::vector<Diagnostic> list_;
};

// "the string \"64\"", "the float 1.5", "a table": what a value is, for messages.
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

// ---------------------------------------------------------------------------------------------
// Checked values.

// An interval of real numbers, such as (0, 1000] for a learning rate.
struct Interval {
  double lo = 0.0, hi = 0.0;
  bool lo_open = false, hi_open = false;

  bool Contains(double v) const {  // false for nan
    return (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
  }
  std::string Text() const {
    return (lo_open ? "(" : "[") + PlainNumber(lo) + ", " + PlainNumber(hi) + (hi_open ? ")" : "]");
  }
};
Interval Closed(double lo, double hi) { return {lo, hi, false, false}; }
Interval OpenClosed(double lo, double hi) { return {lo, hi, true, false}; }  // (lo, hi]
Interval ClosedOpen(double lo, double hi) { return {lo, hi, false, true}; }  // [lo, hi)

// The value of an integer node within [lo, hi], or nothing and *problem says why.
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

// The value of a number node (integers are numbers) within `range` once stored as a T, or
// nothing and *problem says why.
template <typename T>
std::optional<T> NumberIn(const toml::node& node, Interval range, std::string* problem) {
  double given = 0.0;
  if (const auto* integer = node.as_integer()) {
    given = static_cast<double>(integer->get());
  } else if (const auto* floating = node.as_floating_point()) {
    given = floating->get();
  } else {
    *problem = "must be a number in " + range.Text() + ", got " + Describe(node);
    return std::nullopt;
  }
  const T stored = static_cast<T>(given);
  if (!std::isfinite(given)) {
    *problem = "must be a finite number in " + range.Text() + ", got " + PlainNumber(given);
  } else if (!range.Contains(given)) {
    *problem = "must be a number in " + range.Text() + ", got " + PlainNumber(given);
  } else if (!range.Contains(static_cast<double>(stored))) {
    *problem = "must be a number in " + range.Text() + ", got " + PlainNumber(given) +
               ", which single precision rounds to " + PlainNumber(static_cast<double>(stored));
  } else {
    return stored;
  }
  return std::nullopt;
}

std::vector<std::string_view> SplitChoices(std::string_view choices) {
  std::vector<std::string_view> names;
  while (!choices.empty()) {
    const std::size_t comma = choices.find(", ");
    names.push_back(choices.substr(0, comma));
    choices = comma == std::string_view::npos ? std::string_view() : choices.substr(comma + 2);
  }
  return names;
}

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

bool ValidName(std::string_view name) {
  return !name.empty() && name.size() <= kMaxNameLength &&
         std::all_of(name.begin(), name.end(), NameChar);
}

// The job file's stem with every character a name may not hold replaced by '-'.
std::string DefaultName(const std::string& display_path) {
  std::string name = fs::path(display_path).stem().string();
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !NameChar(c); }, '-');
  if (name.size() > kMaxNameLength) name.resize(kMaxNameLength);
  return name.empty() ? "job" : name;
}

// Empty when `path` is a readable file; otherwise what is wrong, naming the path.
std::string FileProblem(const fs::path& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return "cannot access " + path.string() + ": " + ec.message();
  }
  if (!fs::exists(status)) return "no such file: " + path.string();
  if (fs::is_directory(status)) return "is a directory, not a file: " + path.string();
  if (::access(path.c_str(), R_OK) != 0) {
    return "cannot read " + path.string() + ": " + std::generic_category().message(errno);
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
// Reading tables.

// Reads one table of the job: the top level (section "") or a section such as [train]. Every
// key asked for is registered as known, so RejectUnknown can name the others; the section may be
// absent (null), and then every read finds nothing. A typed read assigns a present, valid value
// and returns its node; it reports a present, invalid one (the key then counts as failed) and
// returns null; it returns null for an absent key and leaves the output alone.
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
  std::string Dotted(std::string_view key) const {
    return section_.empty() ? std::string(key) : section_ + "." + std::string(key);
  }

  const toml::node* Find(std::string_view key) {
    if (!Knows(key)) known_.push_back(key);
    return table_ != nullptr ? table_->get(key) : nullptr;
  }

  template <typename T>
  const toml::node* Int(std::string_view key, std::int64_t lo, std::int64_t hi, T* out) {
    const toml::node* node = Find(key);
    if (node == nullptr) return nullptr;
    std::string problem;
    const std::optional<std::int64_t> value = IntIn(*node, lo, hi, &problem);
    if (!value) return Report(*node, key, problem);
    *out = static_cast<T>(*value);
    return node;
  }

  template <typename T>
  const toml::node* Number(std::string_view key, Interval range, T* out) {
    const toml::node* node = Find(key);
    if (node == nullptr) return nullptr;
    std::string problem;
    const std::optional<T> value = NumberIn<T>(*node, range, &problem);
    if (!value) return Report(*node, key, problem);
    *out = *value;
    return node;
  }

  const toml::node* Bool(std::string_view key, bool* out) {
    const toml::node* node = Find(key);
    if (node == nullptr) return nullptr;
    if (!node->is_boolean()) {
      return Report(*node, key, "must be true or false, got " + Describe(*node));
    }
    *out = node->as_boolean()->get();
    return node;
  }

  const toml::node* String(std::string_view key, std::string* out) {
    const toml::node* node = Find(key);
    if (node == nullptr) return nullptr;
    if (!node->is_string()) return Report(*node, key, "must be a string, got " + Describe(*node));
    *out = node->as_string()->get();
    return node;
  }

  // A name from `choices` (as listed by the engine's *Choices()), turned into E by `parse`.
  template <typename E>
  const toml::node* Enum(std::string_view key, Result<E> (*parse)(std::string_view),
                         std::string_view choices, E* out) {
    const toml::node* node = Find(key);
    if (node == nullptr) return nullptr;
    const std::string allowed = "must be one of: " + std::string(choices) + "; got ";
    if (!node->is_string()) return Report(*node, key, allowed + Describe(*node));
    const std::string& name = node->as_string()->get();
    Result<E> value = parse(name);
    if (!value.ok()) {
      const std::string_view close = ClosestName(name, SplitChoices(choices));
      return Report(*node, key,
                    allowed + TomlString(name) +
                        (close.empty() ? "" : " (did you mean \"" + std::string(close) + "\"?)"));
    }
    *out = value.value();
    return node;
  }

  // Reports a problem with the value of `key` (which then counts as failed); returns null.
  const toml::node* Report(const toml::node& node, std::string_view key, std::string message) {
    if (!Failed(key)) failed_.push_back(key);
    sink_.AtNode(node, Dotted(key), std::move(message));
    return nullptr;
  }

  // Reports a required key that is absent: at the section's header, or at line 0 of the file
  // when the whole section is missing.
  void Missing(std::string_view key, std::string message) {
    if (table_ != nullptr) {
      sink_.AtNode(*table_, Dotted(key), std::move(message));
    } else {
      sink_.InFile(0, 0, Dotted(key), std::move(message));
    }
  }

 private:
  static bool Contains(const std::vector<std::string_view>& list, std::string_view key) {
    return std::find(list.begin(), list.end(), key) != list.end();
  }

  const toml::table* table_;  // in the document the caller keeps alive; null: section absent
  std::string section_;
  Sink& sink_;
  std::vector<std::string_view> known_;   // the keys asked for: literals, static storage
  std::vector<std::string_view> failed_;  // the keys whose values were reported
};

// The section table `name` of the top level, or null (reported when present but no table).
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

// Where relative data paths are resolved from.
struct PathBase {
  fs::path file;      // the job file's directory
  fs::path override;  // the current directory, for paths given with --set
};

// Reads the data path `key`: made absolute, normalised, checked to be a readable file.
// `unused` is empty when the format reads this path, else why the key may not be given.
void ReadPath(TableReader& r, std::string_view key, const std::string& unused, const PathBase& base,
              std::string* out) {
  std::string text;
  const toml::node* node = r.String(key, &text);
  if (node == nullptr) return;
  if (!unused.empty()) {
    r.Report(*node, key, unused);
    return;
  }
  if (text.empty()) {
    r.Report(*node, key, "must name a file, got an empty string");
    return;
  }
  fs::path path(text);
  if (path.is_relative()) path = (FromOverride(node->source()) ? base.override : base.file) / path;
  path = path.lexically_normal();
  if (std::string problem = FileProblem(path); !problem.empty()) {
    r.Report(*node, key, std::move(problem));
    return;
  }
  *out = path.string();
}

// data.train, train_labels, test and test_labels, each required or refused by the format.
void ReadDataFiles(TableReader& r, const PathBase& base, bool format_known, DataConfig* d) {
  const std::string format = "format \"" + std::string(DataFormatName(d->format)) + "\"";
  const bool idx = format_known && d->format == DataFormat::kIdx;
  const bool synthetic = format_known && d->format == DataFormat::kSynthetic;
  std::string labels_not_read;
  if (format_known && !idx) {
    labels_not_read = "is only used with format \"idx\", not " + format;
    if (d->format == DataFormat::kCsv) {
      labels_not_read += " (csv labels are a column: label_column or label_index)";
    }
  }
  const std::string not_read = synthetic ? "is not used with format \"synthetic\"" : "";
  ReadPath(r, "train", not_read, base, &d->train);
  ReadPath(r, "train_labels", labels_not_read, base, &d->train_labels);
  ReadPath(r, "test", not_read, base, &d->test);
  ReadPath(r, "test_labels", labels_not_read, base, &d->test_labels);
  if (format_known && !synthetic && !r.Present("train")) {
    r.Missing("train", "is required for " + format + " (the training data file)");
  }
  if (idx && !r.Present("train_labels")) {
    r.Missing("train_labels", "is required for format \"idx\" (the training labels file)");
  }
  if (idx && r.Present("test") && !r.Present("test_labels")) {
    r.Missing("test_labels", "is required with data.test for format \"idx\"");
  }
  if (const toml::node* labels = r.Find("test_labels");
      labels != nullptr && !r.Failed("test_labels") && !r.Present("test")) {
    r.Report(*labels, "test_labels", "is given without data.test");
  }
}

// data.header, label_column, label_index and delimiter.
void ReadCsvKeys(TableReader& r, DataConfig* d) {
  r.Bool("header", &d->header);
  const toml::node* column = r.String("label_column", &d->label_column);
  if (column != nullptr && d->label_column.empty()) {
    column = r.Report(*column, "label_column", "must name a column, got an empty string");
  }
  const toml::node* index = r.Int("label_index", -1, kMaxLayerWidth - 1, &d->label_index);
  if (column != nullptr && index != nullptr) {
    r.Report(*index, "label_index", "conflicts with data.label_column: give one of them");
  }
  if (column != nullptr && !d->header && !r.Failed("header")) {
    r.Report(*column, "label_column",
             "needs data.header = true (columns are named by the header line)");
  }
  std::string delimiter;
  if (const toml::node* node = r.String("delimiter", &delimiter)) {
    if (delimiter.size() != 1 || delimiter == "\"" || delimiter == "\n" || delimiter == "\r") {
      r.Report(*node, "delimiter",
               "must be one character other than a double quote or a line break, got " +
                   TomlString(delimiter));
    } else {
      d->delimiter = delimiter[0];
    }
  }
}

// data.scale: a divisor, or "standardize".
void ReadScale(TableReader& r, DataConfig* d) {
  const toml::node* node = r.Find("scale");
  if (node == nullptr) return;
  const Interval range = OpenClosed(0, 1e9);
  std::string problem;
  if (node->is_string() && node->as_string()->get() == "standardize") {
    d->standardize = true;
    d->scale = 1.0f;
  } else if (!node->is_number()) {
    r.Report(*node, "scale",
             "must be a number in " + range.Text() + " (the divisor) or \"standardize\", got " +
                 Describe(*node));
  } else if (const std::optional<float> divisor = NumberIn<float>(*node, range, &problem)) {
    d->scale = *divisor;
  } else {
    r.Report(*node, "scale", problem);
  }
}

void ReadData(TableReader& r, const PathBase& base, DataConfig* d) {
  r.Enum("format", ParseDataFormat, DataFormatChoices(), &d->format);
  r.Enum("synthetic", ParseSyntheticKind, SyntheticKindChoices(), &d->synthetic);
  // Requirements depend on the format; with an invalid one only types and ranges are checked.
  const bool format_known = !r.Failed("format");
  const bool libsvm = format_known && d->format == DataFormat::kLibsvm;
  const bool synthetic = format_known && d->format == DataFormat::kSynthetic;
  const bool linear = d->synthetic == SyntheticKind::kLinear;

  // Defaults that depend on the format or the generator, before the keys that override them.
  d->scale = format_known && d->format == DataFormat::kIdx ? 255.0f : 1.0f;
  d->noise = linear ? data::TeacherOptions{}.noise : data::BlobsOptions{}.spread;
  if (synthetic && !r.Failed("synthetic")) {
    d->features = static_cast<std::int64_t>(linear ? data::TeacherOptions{}.features
                                                   : data::BlobsOptions{}.features);
  }

  ReadDataFiles(r, base, format_known, d);
  ReadCsvKeys(r, d);
  const toml::node* features = r.Int("features", 0, kMaxLayerWidth, &d->features);
  if (features != nullptr && (libsvm || synthetic) && d->features == 0) {
    r.Report(*features, "features",
             "must be at least 1 for format \"" + std::string(DataFormatName(d->format)) + "\"");
  }
  if (libsvm && !r.Present("features")) {
    r.Missing("features", "is required for format \"libsvm\" (the number of feature columns)");
  }
  ReadScale(r, d);
  r.Number("validation_fraction", Closed(0, 0.9), &d->validation_fraction);
  r.Int("rows", 1, kMaxRows, &d->rows);
  r.Int("test_rows", 0, kMaxRows, &d->test_rows);
  r.Int("classes", 2, kMaxClasses, &d->classes);
  r.Number("noise", Closed(0, 1e6), &d->noise);
  r.Int("seed", 0, kMaxSeed, &d->data_seed);
}

// Output counts a model type allows or a loss needs.
enum class Arity { kAny, kOne, kMany };

Arity TypeArity(model::ModelType type) {
  switch (type) {
    case model::ModelType::kLogistic:
      return Arity::kOne;
    case model::ModelType::kSoftmax:
      return Arity::kMany;
    case model::ModelType::kLinear:
    case model::ModelType::kMlp:
      break;
  }
  return Arity::kAny;
}

Arity LossArity(model::LossType loss) {
  return loss == model::LossType::kSoftmaxCrossEntropy ? Arity::kMany : Arity::kOne;
}

std::string ArityText(Arity arity) {
  switch (arity) {
    case Arity::kOne:
      return "exactly 1 output";
    case Arity::kMany:
      return "at least 2 outputs";
    case Arity::kAny:
      break;
  }
  return "any number of outputs";
}

bool Fits(Arity arity, int outputs) {  // outputs 0: inferred from the data later
  return outputs == 0 || arity == Arity::kAny || (arity == Arity::kOne) == (outputs == 1);
}

const toml::node* ReadHidden(TableReader& r, std::vector<int>* hidden) {
  const toml::node* node = r.Find("hidden");
  if (node == nullptr) return nullptr;
  const toml::array* layers = node->as_array();
  if (layers == nullptr) {
    return r.Report(*node, "hidden",
                    "must be an array of layer sizes such as [256, 128], got " + Describe(*node));
  }
  if (layers->size() > kMaxHiddenLayers) {
    return r.Report(*node, "hidden",
                    "must have at most " + std::to_string(kMaxHiddenLayers) + " layers, got " +
                        std::to_string(layers->size()));
  }
  std::vector<int> sizes;
  for (std::size_t i = 0; i < layers->size(); ++i) {
    std::string problem;
    if (const std::optional<std::int64_t> width =
            IntIn((*layers)[i], 1, kMaxLayerWidth, &problem)) {
      sizes.push_back(static_cast<int>(*width));
    } else {
      r.Report((*layers)[i], "hidden", "layer " + std::to_string(i + 1) + " " + problem);
    }
  }
  if (r.Failed("hidden")) return nullptr;
  *hidden = std::move(sizes);
  return node;
}

// The output count the data will have, where the job alone tells it: generated data. 0: unknown.
int GeneratedOutputs(const DataConfig& d) {
  if (d.format != DataFormat::kSynthetic) return 0;
  return d.synthetic == SyntheticKind::kLinear ? 1 : d.classes;
}

// Reads [model]; a loss that is not given becomes model::DefaultLoss of the type and of the
// output count, the given one or else the one `data` is known to have.
void ReadModel(TableReader& r, const DataConfig& data, model::ModelSpec* m) {
  m->inputs = 0;  // 0: from the data
  m->outputs = 0;
  r.Enum("type", model::ParseModelType, model::ModelTypeChoices(), &m->type);
  const toml::node* hidden = ReadHidden(r, &m->hidden);
  r.Enum("activation", model::ParseActivation, model::ActivationChoices(), &m->activation);
  const toml::node* loss = r.Enum("loss", model::ParseLoss, model::LossChoices(), &m->loss);
  r.Enum("init", model::ParseInit, model::InitChoices(), &m->init);
  r.Int("inputs", 0, kMaxLayerWidth, &m->inputs);
  const toml::node* outputs = r.Int("outputs", 0, kMaxLayerWidth, &m->outputs);
  if (!r.Present("loss")) {
    m->loss = model::DefaultLoss(m->type, m->outputs != 0 ? m->outputs : GeneratedOutputs(data));
  }
  if (r.Failed("type")) return;  // the checks below hold a valid type against the rest

  const std::string type = "type \"" + std::string(model::ModelTypeName(m->type)) + "\"";
  if (hidden != nullptr && !m->hidden.empty() && m->type != model::ModelType::kMlp) {
    r.Report(*hidden, "hidden", "is only allowed for type \"mlp\", not " + type);
  }
  const Arity type_arity = TypeArity(m->type);
  if (outputs != nullptr && !Fits(type_arity, m->outputs)) {
    r.Report(*outputs, "outputs",
             type + " has " + ArityText(type_arity) + ", got " + std::to_string(m->outputs));
  }
  if (loss != nullptr) {
    const Arity loss_arity = LossArity(m->loss);
    const std::string needs =
        "loss \"" + std::string(model::LossName(m->loss)) + "\" needs " + ArityText(loss_arity);
    if (type_arity != Arity::kAny && type_arity != loss_arity) {
      r.Report(*loss, "loss", needs + ", but " + type + " has " + ArityText(type_arity));
    } else if (outputs != nullptr && !Fits(loss_arity, m->outputs)) {
      r.Report(*loss, "loss", needs + ", got outputs = " + std::to_string(m->outputs));
    }
  }
}

void ReadTrain(TableReader& r, train::TrainOptions* t, int* threads, float* clip_norm) {
  const toml::node* epochs = r.Int("epochs", 0, kMaxEpochs, &t->epochs);
  const toml::node* steps = r.Int("steps", 0, kMaxSteps, &t->steps);
  r.Int("batch_size", 1, kMaxBatchSize, &t->batch_size);
  r.Int("seed", 0, kMaxSeed, &t->seed);
  r.Int("threads", 1, kMaxThreads, threads);
  r.Int("eval_every", 0, kMaxSteps, &t->eval_every);
  r.Int("log_every", 1, kMaxSteps, &t->log_every);
  r.Number("target_accuracy", Closed(0, 1), &t->target_accuracy);
  r.Number("weight_decay", Closed(0, 1), &t->weight_decay);
  r.Number("clip_norm", Closed(0, 1e9), clip_norm);
  if (t->epochs == 0 && t->steps == 0 && !r.Failed("epochs") && !r.Failed("steps")) {
    const std::string message =
        "train.epochs and train.steps are both 0, so the run would never end: set at least one";
    if (epochs != nullptr) {
      r.Report(*epochs, "epochs", message);
    } else if (steps != nullptr) {
      r.Report(*steps, "steps", message);
    } else {
      r.Missing("epochs", message);
    }
  }
}

void ReadOptimizer(TableReader& r, optim::OptimizerOptions* o, optim::ScheduleOptions* s) {
  r.Enum("type", optim::ParseOptimizerType, optim::OptimizerTypeChoices(), &o->type);
  r.Number("lr", OpenClosed(0, 1000), &s->lr);
  r.Number("momentum", ClosedOpen(0, 1), &o->momentum);
  const toml::node* nesterov = r.Bool("nesterov", &o->nesterov);
  r.Number("beta1", ClosedOpen(0, 1), &o->beta1);
  r.Number("beta2", ClosedOpen(0, 1), &o->beta2);
  r.Number("eps", OpenClosed(0, 1), &o->eps);
  r.Number("initial_accumulator", Closed(0, 1e6), &o->initial_accumulator);
  r.Enum("schedule", optim::ParseScheduleType, optim::ScheduleTypeChoices(), &s->type);
  r.Int("warmup_steps", 0, kMaxSteps, &s->warmup_steps);
  r.Int("step_size", 1, kMaxSteps, &s->step_size);
  r.Number("gamma", OpenClosed(0, 1), &s->gamma);
  const toml::node* min_lr = r.Number("min_lr", Closed(0, 1000), &s->min_lr);
  if (min_lr != nullptr && !r.Failed("lr") && s->min_lr > s->lr) {
    r.Report(
        *min_lr, "min_lr",
        "must not exceed optimizer.lr (" + TomlFloat(s->lr) + "), got " + TomlFloat(s->min_lr));
  }
  if (nesterov != nullptr && o->nesterov && o->type == optim::OptimizerType::kMomentum &&
      o->momentum == 0.0f && !r.Failed("momentum")) {
    r.Report(*nesterov, "nesterov", "needs optimizer.momentum > 0");
  }
}

void ReadCluster(TableReader& r, ClusterConfig* c) {
  const toml::node* workers = r.Int("workers", 1, kMaxWorkers, &c->workers);
  r.Enum("mode", ParseClusterMode, ClusterModeChoices(), &c->mode);
  if (workers != nullptr && c->workers > 1 && c->mode == ClusterMode::kSingle &&
      !r.Failed("mode")) {
    r.Report(*workers, "workers",
             "is " + std::to_string(c->workers) +
                 ", but cluster.mode \"single\" trains one worker: use mode \"sync\", \"async\" "
                 "or \"local\" for several");
  }
}

void ReadCheckpoint(TableReader& r, CheckpointConfig* c) {
  r.Int("every_steps", 0, kMaxSteps, &c->every_steps);
  r.Number("every_seconds", Closed(0, 1e7), &c->every_seconds);
  r.Int("keep", 1, kMaxKeep, &c->keep);
}

// A cosine schedule ends at the run's last step, which must come after the warm-up.
void CheckWarmup(TableReader& optimizer, const train::TrainOptions& t) {
  const optim::ScheduleOptions& s = t.schedule;
  const toml::node* warmup = optimizer.Find("warmup_steps");
  if (warmup != nullptr && !optimizer.Failed("warmup_steps") &&
      s.type == optim::ScheduleType::kCosine && t.steps > 0 && s.warmup_steps >= t.steps) {
    optimizer.Report(*warmup, "warmup_steps",
                     "must be less than train.steps (" + std::to_string(t.steps) +
                         ") for schedule \"cosine\", got " + std::to_string(s.warmup_steps));
  }
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

// Reports every key that no reader asked for.
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

// The top-level name: kept simple, because it names the job in listings, paths and logs.
void ReadName(TableReader& top, std::string* name) {
  std::string given;
  const toml::node* node = top.String("name", &given);
  if (node == nullptr) return;
  if (ValidName(given)) {
    *name = given;
  } else {
    top.Report(*node, "name",
               "must be 1 to " + std::to_string(kMaxNameLength) +
                   " letters, digits, '.', '_' or '-', got " + TomlString(given));
  }
}

JobConfig ReadJob(const toml::table& root, const std::string& display_path, const PathBase& base,
                  Sink& sink) {
  JobConfig job;
  job.source_path = display_path;
  TableReader top(&root, "", sink);
  job.name = DefaultName(display_path);
  ReadName(top, &job.name);
  TableReader data(SectionTable(top, "data"), "data", sink);
  TableReader model(SectionTable(top, "model"), "model", sink);
  TableReader train(SectionTable(top, "train"), "train", sink);
  TableReader optimizer(SectionTable(top, "optimizer"), "optimizer", sink);
  TableReader cluster(SectionTable(top, "cluster"), "cluster", sink);
  TableReader checkpoint(SectionTable(top, "checkpoint"), "checkpoint", sink);

  ReadData(data, base, &job.data);
  ReadModel(model, job.data, &job.model);
  ReadTrain(train, &job.train, &job.threads, &job.clip_norm);
  ReadOptimizer(optimizer, &job.optimizer, &job.train.schedule);
  ReadCluster(cluster, &job.cluster);
  ReadCheckpoint(checkpoint, &job.checkpoint);
  CheckWarmup(optimizer, job.train);

  const TableReader* const readers[] = {&top,       &data,    &model,     &train,
                                        &optimizer, &cluster, &checkpoint};
  RejectUnknown(readers, sink);
  return job;
}

// ---------------------------------------------------------------------------------------------
// Text, overrides and files.

std::string Trim(std::string_view text) {
  const std::size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return "";
  return std::string(text.substr(begin, text.find_last_not_of(" \t") - begin + 1));
}

// A value that --set takes as a string when it is not TOML: no whitespace, quotes or brackets.
bool IsBareWord(std::string_view value) {
  return !value.empty() && value.find_first_of(" \t\"'[]{}#,=") == std::string_view::npos;
}

// Where and why toml++ stopped.
struct SyntaxError {
  int line = 0, column = 0;
  std::string description;
};

std::optional<toml::table> ParseToml(std::string_view text, std::string_view source,
                                     SyntaxError* error) {
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    *error = {static_cast<int>(e.source().begin.line), static_cast<int>(e.source().begin.column),
              std::string(e.description())};
    return std::nullopt;
  }
}

// Each override as a one-key document whose nodes carry the source path "--set".
std::vector<toml::table> ParseOverrides(const std::vector<std::string>& overrides, Sink& sink) {
  std::vector<toml::table> documents;
  for (const std::string& text : overrides) {
    const std::size_t equals = text.find('=');
    const std::string key = Trim(std::string_view(text).substr(0, equals));
    if (equals == std::string::npos || key.empty()) {
      sink.InOverride(key, "expected key=value, got " + TomlString(text));
      continue;
    }
    if (text.find_first_of("\r\n") != std::string::npos) {
      sink.InOverride(key, "must be one line, got " + TomlString(text));
      continue;
    }
    const std::string value = Trim(std::string_view(text).substr(equals + 1));
    SyntaxError error;
    std::optional<toml::table> document = ParseToml(key + " = " + value, kOverrideFile, &error);
    if (!document && IsBareWord(value)) {
      document = ParseToml(key + " = " + TomlString(value), kOverrideFile, &error);
    }
    if (document) {
      documents.push_back(std::move(*document));
    } else {
      sink.InOverride(key, "cannot parse " + TomlString(text) + " as key=value (TOML value or " +
                               "bare word): " + error.description);
    }
  }
  return documents;
}

// Sets every value of `from` in `into`, replacing what was there; tables merge key by key.
void Merge(toml::table& into, toml::table&& from) {
  for (auto&& [key, node] : from) {
    toml::node* existing = into.get(key.str());
    if (existing != nullptr && existing->is_table() && node.is_table()) {
      Merge(*existing->as_table(), std::move(*node.as_table()));
    } else {
      into.insert_or_assign(key, std::move(node));
    }
  }
}

LoadResult Load(std::string_view text, const std::string& display_path,
                const std::vector<std::string>& overrides, const std::string& base_dir) {
  Sink sink(display_path);
  SyntaxError error;
  std::optional<toml::table> root = ParseToml(text, display_path, &error);
  if (!root) sink.InFile(error.line, error.column, "", "TOML syntax error: " + error.description);
  std::vector<toml::table> documents = ParseOverrides(overrides, sink);
  if (!root) return {std::nullopt, std::move(sink).Take()};
  for (toml::table& document : documents) Merge(*root, std::move(document));

  std::error_code ec;
  PathBase base{fs::absolute(fs::path(base_dir), ec), fs::current_path(ec)};
  JobConfig job = ReadJob(*root, display_path, base, sink);
  if (sink.size() > 0) return {std::nullopt, std::move(sink).Take()};
  return {std::move(job), {}};
}

bool ReadWholeFile(const std::string& path, std::string* text, std::string* problem) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    *problem = "cannot read the job file: it is a directory";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *problem = "cannot read the job file: " + std::generic_category().message(errno);
    return false;
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) {
    *problem = "cannot read the job file: read error";
    return false;
  }
  *text = std::move(contents).str();
  return true;
}

// Runs `load`, turning any exception (an allocation failure) into a diagnostic on `file`.
template <typename F>
LoadResult Guarded(const std::string& file, F&& load) {
  try {
    return load();
  } catch (const std::exception& e) {
    return {std::nullopt, {Diagnostic{file, 0, 0, "", std::string("internal error: ") + e.what()}}};
  }
}

}  // namespace

LoadResult ParseJobText(std::string_view toml_text, const std::string& display_path,
                        const std::vector<std::string>& overrides, const std::string& base_dir) {
  return Guarded(display_path, [&] { return Load(toml_text, display_path, overrides, base_dir); });
}

LoadResult LoadJobFile(const std::string& path, const std::vector<std::string>& overrides) {
  return Guarded(path, [&]() -> LoadResult {
    std::string text, problem;
    if (!ReadWholeFile(path, &text, &problem)) {
      return {std::nullopt, {Diagnostic{path, 0, 0, "", problem}}};
    }
    std::error_code ec;
    const fs::path directory = fs::absolute(fs::path(path), ec).parent_path();
    return Load(text, path, overrides, directory.string());
  });
}

}  // namespace dtrain::config
