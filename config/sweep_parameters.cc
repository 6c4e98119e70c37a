#include "config/sweep_parameters.h"

#include <cmath>
#include <optional>
#include <sstream>
#include <utility>

#include "config/suggest.h"
#include "config/toml_text.h"

namespace dtrain::config::internal {
namespace {

constexpr std::string_view kKinds = "values, uniform, log_uniform, int";
constexpr std::string_view kKindNames[] = {"values", "uniform", "log_uniform", "int"};
constexpr std::int64_t kMaxIntBound = std::int64_t{1} << 53;

bool IsSpec(const toml::table& table) {
  return table.contains("values") || table.contains("uniform") || table.contains("log_uniform") ||
         table.contains("int");
}

template <typename Formatter>
std::string Formatted(const toml::node& node) {
  std::ostringstream out;
  out << Formatter(node, toml::format_flags::none);
  return out.str();
}

// { values = [...] }: each element a value or an array of values (no tables).
bool ReadValues(TableReader& r, const toml::node& node, SweepParameter* p) {
  const toml::array* values = node.as_array();
  if (values == nullptr || values->empty()) {
    r.Report(node, "values",
             "must be a non-empty array of the key's values, got " + Describe(node));
    return false;
  }
  for (std::size_t i = 0; i < values->size(); ++i) {
    const toml::node& value = (*values)[i];
    const auto plain_value = [](const toml::node& n) {
      const std::optional<double> number = n.value_exact<double>();
      return n.is_value() && (!number || std::isfinite(*number));
    };
    bool plain = plain_value(value);
    if (const toml::array* array = value.as_array()) {
      plain = true;
      for (const toml::node& element : *array) plain = plain && plain_value(element);
    }
    if (!plain) {
      r.Report(value, "values",
               "value " + std::to_string(i + 1) +
                   " must be a finite number, string, boolean or array of those, got " +
                   Describe(value));
      return false;
    }
    p->values.push_back(ValueOf(value));
  }
  return true;
}

// "[a, b]", appended piece by piece: `"[" + std::to_string(...)` trips GCC 12's -Wrestrict.
std::string PairText(const std::string& a, const std::string& b) {
  std::string text = "[";
  text += a;
  text += ", ";
  text += b;
  text += ']';
  return text;
}

// { uniform = [lo, hi] }, { log_uniform = [lo, hi] } (lo > 0) or { int = [lo, hi] }.
bool ReadRange(TableReader& r, std::string_view kind, const toml::node& node, SweepParameter* p) {
  const bool integer = kind == "int";
  const bool log = kind == "log_uniform";
  const toml::array* range = node.as_array();
  const std::string shape =
      std::string(integer ? "two integers in [-2^53, 2^53]" : "two finite numbers") +
      " [low, high] with " + (log ? "0 < low < high" : "low < high");
  const auto refuse = [&](std::string got) {
    r.Report(node, kind, "must be " + shape + ", got " + std::move(got));
    return false;
  };
  if (range == nullptr || range->size() != 2) return refuse(Describe(node));
  const toml::node &lo = (*range)[0], &hi = (*range)[1];
  if (integer) {
    std::string problem;
    const std::optional<std::int64_t> a =
        internal::IntIn(lo, -kMaxIntBound, kMaxIntBound, &problem);
    const std::optional<std::int64_t> b =
        internal::IntIn(hi, -kMaxIntBound, kMaxIntBound, &problem);
    if (!a || !b) return refuse(Describe(a ? hi : lo));
    if (*a >= *b) return refuse(PairText(std::to_string(*a), std::to_string(*b)));
    p->kind = SweepParameter::Kind::kInt;
    p->int_lo = *a;
    p->int_hi = *b;
    return true;
  }
  const std::optional<double> a = lo.value<double>(), b = hi.value<double>();
  if (!lo.is_number() || !hi.is_number() || !a || !b || !std::isfinite(*a) || !std::isfinite(*b)) {
    return refuse(Describe(lo.is_number() ? hi : lo));
  }
  if (*a >= *b || (log && *a <= 0)) {
    return refuse(PairText(PlainNumber(*a), PlainNumber(*b)));
  }
  p->kind = log ? SweepParameter::Kind::kLogUniform : SweepParameter::Kind::kUniform;
  p->lo = *a;
  p->hi = *b;
  return true;
}

// One { kind = ... } table; false when reported.
bool ReadSpec(TableReader& r, SweepParameter* p) {
  std::string_view kind;
  for (std::string_view k : kKindNames) {
    const toml::node* node = r.Find(k);
    if (node == nullptr) continue;
    if (!kind.empty()) {
      r.Report(*node, k,
               "conflicts with " + std::string(kind) + ": give one of " + std::string(kKinds));
      return false;
    }
    kind = k;
  }
  const toml::node& node = *r.Find(kind);
  return kind == "values" ? ReadValues(r, node, p) : ReadRange(r, kind, node, p);
}

}  // namespace

ParameterValue ValueOf(const toml::node& node) {
  if (const toml::array* array = node.as_array()) {
    ParameterValue all{"[", "[", ""};
    for (std::size_t i = 0; i < array->size(); ++i) {
      const ParameterValue element = ValueOf((*array)[i]);
      all.toml += (i > 0 ? ", " : "") + element.toml;
      all.json += (i > 0 ? ", " : "") + element.json;
    }
    all.toml += "]";
    all.json += "]";
    all.shown = all.toml;
    return all;
  }
  if (const std::optional<double> value = node.value_exact<double>()) {
    const std::string text = TomlFloat(*value);
    return {text, text, text};
  }
  const std::string toml = Formatted<toml::toml_formatter>(node);
  return {toml, Formatted<toml::json_formatter>(node), toml};
}

void ReadParameters(const toml::table& table, const std::string& prefix,
                    std::deque<TableReader>& readers, Sink& sink, std::vector<ReadParameter>* out) {
  for (auto&& [key, node] : table) {
    const std::string dotted =
        prefix.empty() ? std::string(key.str()) : prefix + "." + std::string(key.str());
    const toml::table* spec = node.as_table();
    if (spec != nullptr && !spec->empty() && !IsSpec(*spec)) {
      ReadParameters(*spec, dotted, readers, sink, out);
      continue;
    }
    if (spec == nullptr || spec->empty()) {
      // Within a parameter's table, a mistyped kind ("value") reads as one more level of key.
      const std::string_view close = prefix.empty() ? "" : ClosestName(key.str(), kKindNames);
      sink.AtKey(key, node, "sweep.parameters." + dotted,
                 !close.empty()
                     ? "unknown key; did you mean '" + std::string(close) + "'?"
                     : "must be a table with one of " + std::string(kKinds) +
                           ", such as { values = [64, 128] } or { log_uniform = [1e-4, 1e-1] }, "
                           "got " +
                           Describe(node));
      continue;
    }
    TableReader& r = readers.emplace_back(spec, "sweep.parameters." + dotted, sink);
    ReadParameter read;
    read.parameter.key = dotted;
    read.line = static_cast<int>(key.source().begin.line);
    read.column = static_cast<int>(key.source().begin.column);
    if (ReadSpec(r, &read.parameter)) out->push_back(std::move(read));
  }
}

}  // namespace dtrain::config::internal
