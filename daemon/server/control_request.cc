#include "daemon/server/control_request.h"

#include <algorithm>
#include <utility>

#include "daemon/store/metric_value.h"

namespace dtrain::server {

using json = nlohmann::json;

std::optional<std::int64_t> IntField(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

std::optional<std::string> StringField(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::optional<std::vector<std::string>> StringsField(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  std::vector<std::string> strings;
  const auto it = j.find(key);
  if (it == j.end()) return strings;
  if (!it->is_array()) return std::nullopt;
  for (const json& item : *it) {
    if (!item.is_string()) return std::nullopt;
    strings.push_back(item.get<std::string>());
  }
  return strings;
}

std::optional<double> NumberField(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

bool BoolField(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

ParsedRequest ParseControlRequest(std::string_view payload) {
  ParsedRequest parsed;
  json request = json::parse(payload, nullptr, false);
  if (request.is_discarded() || !request.is_object()) return parsed;
  if (IntField(request, "v") != 1) {
    parsed.verdict = ParsedRequest::Verdict::kBadVersion;
    return parsed;
  }
  parsed.verdict = ParsedRequest::Verdict::kRequest;
  parsed.type = StringField(request, "type").value_or("");
  parsed.request = std::move(request);
  return parsed;
}

std::optional<std::vector<train::MetricPoint>> ParseMetricPoints(std::string_view payload) {
  const json message = json::parse(payload, nullptr, false);
  if (!message.is_object()) return std::nullopt;
  const auto list = message.find("points");
  if (list == message.end() || !list->is_array()) return std::nullopt;
  std::vector<train::MetricPoint> points;
  for (const json& p : *list) {
    if (!p.is_object() || !p.contains("value")) return std::nullopt;
    // NaN and the infinities travel as what they are (store::MetricValueJson), never as 0.
    const std::optional<double> value = store::MetricValueFromJson(p["value"]);
    if (!value) return std::nullopt;
    points.push_back({IntField(p, "step").value_or(0), NumberField(p, "epoch").value_or(0.0),
                      StringField(p, "name").value_or(""), *value});
  }
  return points;
}

std::vector<store::LogRow> SelectLines(std::vector<store::LogRow>& rows, std::int64_t* after,
                                       std::optional<std::int64_t> worker, double since,
                                       std::optional<std::int64_t> tail) {
  std::vector<store::LogRow> kept;
  for (store::LogRow& row : rows) {
    *after = row.id;
    if (worker && row.worker != *worker) continue;
    if (row.time < since) continue;
    kept.push_back(std::move(row));
  }
  if (tail && static_cast<std::int64_t>(kept.size()) > *tail) {
    // A negative tail keeps nothing (it once erased from before the vector's start).
    kept.erase(kept.begin(), kept.end() - std::max<std::int64_t>(*tail, 0));
  }
  return kept;
}

}  // namespace dtrain::server
