// Reading fields of the daemon's JSON objects without trusting their presence or types: a
// missing, null or ill-typed field reads as the fallback, never as an exception, so a newer
// daemon that adds or drops a field cannot crash the CLI.
//
//   std::string state = JsonString(job, "state");          // "" when absent
//   std::optional<double> v = JsonOptionalNumber(job, "updated");
//
// Pure functions: safe for concurrent use.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace dtrain::cli {

// The member `key` of `object` (nullptr when `object` is not an object or has no such member).
const nlohmann::json* JsonField(const nlohmann::json& object, const std::string& key);

std::string JsonString(const nlohmann::json& object, const std::string& key);
std::optional<double> JsonOptionalNumber(const nlohmann::json& object, const std::string& key);
double JsonNumber(const nlohmann::json& object, const std::string& key, double fallback = 0.0);
std::int64_t JsonInt(const nlohmann::json& object, const std::string& key,
                     std::int64_t fallback = 0);
// The array member `key`, or an empty array.
const nlohmann::json& JsonArray(const nlohmann::json& object, const std::string& key);
// The object member `key` (e.g. a reply's "job"), or an empty object.
const nlohmann::json& JsonObject(const nlohmann::json& object, const std::string& key);

}  // namespace dtrain::cli
