#include "cmd/json_fields.h"

namespace dtrain::cli {

const nlohmann::json* JsonField(const nlohmann::json& object, const std::string& key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string JsonString(const nlohmann::json& object, const std::string& key) {
  const nlohmann::json* field = JsonField(object, key);
  return field != nullptr && field->is_string() ? field->get<std::string>() : std::string();
}

std::optional<double> JsonOptionalNumber(const nlohmann::json& object, const std::string& key) {
  const nlohmann::json* field = JsonField(object, key);
  if (field == nullptr || !field->is_number()) return std::nullopt;
  return field->get<double>();
}

double JsonNumber(const nlohmann::json& object, const std::string& key, double fallback) {
  return JsonOptionalNumber(object, key).value_or(fallback);
}

std::int64_t JsonInt(const nlohmann::json& object, const std::string& key, std::int64_t fallback) {
  const nlohmann::json* field = JsonField(object, key);
  if (field == nullptr || !field->is_number()) return fallback;
  return field->is_number_integer() ? field->get<std::int64_t>()
                                    : static_cast<std::int64_t>(field->get<double>());
}

const nlohmann::json& JsonArray(const nlohmann::json& object, const std::string& key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const nlohmann::json* field = JsonField(object, key);
  return field != nullptr && field->is_array() ? *field : kEmpty;
}

const nlohmann::json& JsonObject(const nlohmann::json& object, const std::string& key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json* field = JsonField(object, key);
  return field != nullptr && field->is_object() ? *field : kEmpty;
}

}  // namespace dtrain::cli
