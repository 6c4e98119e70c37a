// Numbers in the model spec's text form (spec.cc, layer_spec.cc): the whole word or an error
// naming the key, "model spec: inputs expects an integer, got 'x'".
#pragma once

#include <charconv>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/status.h"

namespace dtrain::model {

template <typename T>
Result<T> ParseSpecNumber(std::string_view text, std::string_view key) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return Status::Error("model spec: " + std::string(key) + " expects " +
                         (std::is_integral_v<T> ? "an integer" : "a number") + ", got '" +
                         std::string(text) + "'");
  }
  return value;
}

}  // namespace dtrain::model
