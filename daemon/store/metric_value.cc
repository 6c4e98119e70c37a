#include "daemon/store/metric_value.h"

#include <cmath>
#include <limits>

namespace dtrain::store {

nlohmann::json MetricValueJson(double value) {
  if (std::isnan(value)) return nullptr;
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

std::optional<double> MetricValueFromJson(const nlohmann::json& value) {
  if (value.is_number()) return value.get<double>();
  if (value.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (value == "inf") return std::numeric_limits<double>::infinity();
  if (value == "-inf") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

}  // namespace dtrain::store
