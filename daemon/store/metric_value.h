// A metric's value in every JSON dtrain writes (the control protocol, worker channels, --json
// output): a number when finite; null for NaN (JSON has no NaN); the strings "inf" and "-inf"
// for the infinities. So a loss that diverged reads back as what it was, never as 0 or as a
// number, and NaN and the infinities stay apart.
//
//   json v = MetricValueJson(loss);                       // 0.25, null, "inf" or "-inf"
//   std::optional<double> back = MetricValueFromJson(v);  // nullopt: not such a value
//
// Pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

namespace dtrain::store {

nlohmann::json MetricValueJson(double value);
// The value MetricValueJson wrote; nullopt for anything else (a missing or ill-typed value).
std::optional<double> MetricValueFromJson(const nlohmann::json& value);

}  // namespace dtrain::store
