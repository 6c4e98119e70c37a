#include "core/model/layer_spec.h"

#include <algorithm>
#include <charconv>
#include <span>
#include <vector>

#include "core/model/layer_type.h"
#include "core/model/spec.h"
#include "core/model/spec_text.h"

namespace dtrain::model {
namespace {

// The shortest text that reads back as the same float.
std::string FloatText(float value) {
  char text[32];
  auto [end, ec] = std::to_chars(text, text + sizeof text, value);
  return std::string(text, static_cast<std::size_t>(end - text));
}

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

// A key's value as the spec text spells it.
std::string KeyText(const LayerKey& key, const LayerSpec& layer) {
  switch (key.value) {
    case LayerKeyValue::kInt:
      return std::to_string(layer.*key.int_field);
    case LayerKeyValue::kFloat:
      return FloatText(layer.*key.float_field);
    case LayerKeyValue::kPadding:
      return layer.*key.int_field == kSamePadding ? "same" : std::to_string(layer.*key.int_field);
    case LayerKeyValue::kActivation:
      return std::string(ActivationName(layer.activation));
  }
  return "";
}

// Sets the field of `key` from its spec-text spelling.
Status ReadKeyText(const LayerKey& key, std::string_view value, LayerSpec* spec) {
  if (key.value == LayerKeyValue::kPadding && value == "same") {
    spec->*key.int_field = kSamePadding;
    return Status::Ok();
  }
  switch (key.value) {
    case LayerKeyValue::kInt:
    case LayerKeyValue::kPadding: {
      Result<int> v = ParseSpecNumber<int>(value, key.name);
      if (!v.ok()) return v.status();
      spec->*key.int_field = v.value();
      return Status::Ok();
    }
    case LayerKeyValue::kFloat: {
      Result<float> v = ParseSpecNumber<float>(value, key.name);
      if (!v.ok()) return v.status();
      spec->*key.float_field = v.value();
      return Status::Ok();
    }
    case LayerKeyValue::kActivation: {
      Result<math::Activation> act = ParseActivation(value);
      if (!act.ok()) return act.status();
      spec->activation = act.value();
      return Status::Ok();
    }
  }
  return Status::Ok();
}

}  // namespace

std::string FormatShape(Shape shape) {
  if (shape.Flat()) return std::to_string(shape.channels);
  return std::to_string(shape.channels) + "x" + std::to_string(shape.height) + "x" +
         std::to_string(shape.width);
}

Result<Shape> ParseShape(std::string_view text) {
  const std::vector<std::string_view> parts = Split(text, 'x');
  if (parts.size() != 1 && parts.size() != 3) {
    return Status::Error("shape: expected CxHxW or a size, got '" + std::string(text) + "'");
  }
  int values[3] = {1, 1, 1};
  for (std::size_t i = 0; i < parts.size(); ++i) {
    Result<int> v = ParseSpecNumber<int>(parts[i], "shape");
    if (!v.ok()) return v.status();
    if (v.value() < 1) return Status::Error("shape: every size must be >= 1");
    values[i] = v.value();
  }
  return Shape{values[0], values[1], values[2]};
}

std::string FormatLayerSpec(const LayerSpec& layer) {
  std::string text = LayerTypeName(layer);
  for (const LayerKey& key : LayerTypeOf(layer.kind).keys) {
    text.append(",").append(key.name).append("=").append(KeyText(key, layer));
  }
  return text;
}

Result<LayerSpec> ParseLayerSpec(std::string_view text) {
  const std::vector<std::string_view> words = Split(text, ',');
  Result<LayerSpec> typed = LayerOfType(words[0]);
  if (!typed.ok()) return typed.status();
  LayerSpec spec = typed.value();
  const std::span<const LayerKey> keys = LayerTypeOf(spec.kind).keys;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::size_t eq = words[i].find('=');
    if (eq == std::string_view::npos) {
      return Status::Error("layer spec: expected key=value, got '" + std::string(words[i]) + "'");
    }
    const std::string_view name = words[i].substr(0, eq);
    const auto key =
        std::find_if(keys.begin(), keys.end(), [&](const LayerKey& k) { return k.name == name; });
    if (key == keys.end()) {
      return Status::Error("layer spec: unknown key '" + std::string(name) + "'");
    }
    if (Status read = ReadKeyText(*key, words[i].substr(eq + 1), &spec); !read.ok()) return read;
  }
  return spec;
}

}  // namespace dtrain::model
