#include "core/model/layer_spec.h"

#include <charconv>
#include <sstream>
#include <vector>

#include "core/model/spec.h"
#include "core/model/spec_text.h"

namespace dtrain::model {
namespace {

struct TypeName {
  LayerKind kind;
  std::string_view name;
};
constexpr TypeName kKinds[] = {
    {LayerKind::kConv2d, "conv2d"},       {LayerKind::kMaxPool2d, "maxpool2d"},
    {LayerKind::kAvgPool2d, "avgpool2d"}, {LayerKind::kFlatten, "flatten"},
    {LayerKind::kDense, "dense"},         {LayerKind::kDropout, "dropout"},
    {LayerKind::kBatchNorm, "batchnorm"}};
constexpr std::string_view kChoices =
    "conv2d, maxpool2d, avgpool2d, flatten, dense, dropout, batchnorm, relu, tanh, sigmoid";

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

std::string LayerTypeName(const LayerSpec& layer) {
  if (layer.kind == LayerKind::kActivation) return std::string(ActivationName(layer.activation));
  for (const TypeName& t : kKinds) {
    if (t.kind == layer.kind) return std::string(t.name);
  }
  return "?";
}

Result<LayerSpec> LayerOfType(std::string_view name) {
  for (const TypeName& t : kKinds) {
    if (t.name == name) {
      LayerSpec spec;
      spec.kind = t.kind;
      if (t.kind == LayerKind::kMaxPool2d || t.kind == LayerKind::kAvgPool2d) spec.kernel = 2;
      if (t.kind == LayerKind::kConv2d) spec.stride = 1;
      if (t.kind == LayerKind::kDropout) spec.rate = 0.5f;
      return spec;
    }
  }
  if (name != "identity") {
    if (Result<math::Activation> act = ParseActivation(name); act.ok()) {
      LayerSpec spec;
      spec.kind = LayerKind::kActivation;
      spec.activation = act.value();
      return spec;
    }
  }
  return Status::Error("layer type must be one of " + std::string(kChoices) + ", got '" +
                       std::string(name) + "'");
}

std::string_view LayerTypeChoices() { return kChoices; }

std::string FormatLayerSpec(const LayerSpec& layer) {
  std::ostringstream out;
  out << LayerTypeName(layer);
  switch (layer.kind) {
    case LayerKind::kConv2d:
      out << ",filters=" << layer.filters << ",kernel=" << layer.kernel
          << ",stride=" << layer.stride << ",padding="
          << (layer.padding == kSamePadding ? std::string("same") : std::to_string(layer.padding))
          << ",activation=" << ActivationName(layer.activation);
      break;
    case LayerKind::kMaxPool2d:
    case LayerKind::kAvgPool2d:
      out << ",size=" << layer.kernel << ",stride=" << layer.stride;
      break;
    case LayerKind::kDense:
      out << ",units=" << layer.units << ",activation=" << ActivationName(layer.activation);
      break;
    case LayerKind::kDropout:
      out << ",rate=" << FloatText(layer.rate);
      break;
    case LayerKind::kBatchNorm:
      out << ",momentum=" << FloatText(layer.momentum) << ",eps=" << FloatText(layer.epsilon);
      break;
    case LayerKind::kFlatten:
    case LayerKind::kActivation:
      break;
  }
  return out.str();
}

Result<LayerSpec> ParseLayerSpec(std::string_view text) {
  const std::vector<std::string_view> words = Split(text, ',');
  Result<LayerSpec> typed = LayerOfType(words[0]);
  if (!typed.ok()) return typed.status();
  LayerSpec spec = typed.value();
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::size_t eq = words[i].find('=');
    if (eq == std::string_view::npos) {
      return Status::Error("layer spec: expected key=value, got '" + std::string(words[i]) + "'");
    }
    const std::string_view key = words[i].substr(0, eq);
    const std::string_view value = words[i].substr(eq + 1);
    Status status = Status::Ok();
    auto read_int = [&](int* field) {
      Result<int> v = ParseSpecNumber<int>(value, key);
      if (v.ok()) {
        *field = v.value();
      } else {
        status = v.status();
      }
    };
    if (key == "filters") {
      read_int(&spec.filters);
    } else if (key == "kernel" || key == "size") {
      read_int(&spec.kernel);
    } else if (key == "stride") {
      read_int(&spec.stride);
    } else if (key == "units") {
      read_int(&spec.units);
    } else if (key == "padding") {
      if (value == "same") {
        spec.padding = kSamePadding;
      } else {
        read_int(&spec.padding);
      }
    } else if (key == "rate" || key == "momentum" || key == "eps") {
      Result<float> v = ParseSpecNumber<float>(value, key);
      if (v.ok()) {
        (key == "rate" ? spec.rate : key == "momentum" ? spec.momentum : spec.epsilon) = v.value();
      } else {
        status = v.status();
      }
    } else if (key == "activation") {
      Result<math::Activation> act = ParseActivation(value);
      if (act.ok()) {
        spec.activation = act.value();
      } else {
        status = act.status();
      }
    } else {
      status = Status::Error("layer spec: unknown key '" + std::string(key) + "'");
    }
    if (!status.ok()) return status;
  }
  return spec;
}

}  // namespace dtrain::model
