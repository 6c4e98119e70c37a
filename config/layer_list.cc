#include "config/layer_list.h"

#include <memory>
#include <string>
#include <vector>

#include "core/model/layer.h"

namespace dtrain::config::internal {
namespace {

constexpr std::int64_t kMaxWidth = 1 << 24;  // the engine's own limit (core/model/spec.cc)
constexpr std::int64_t kMaxSide = 1024;      // kernels, strides and pool windows
constexpr std::int64_t kMaxFilters = 1 << 16;
constexpr std::size_t kMaxLayers = 256;

// [model] input_shape = [channels, height, width], or [n] for flat rows.
void ReadInputShape(TableReader& r, model::ModelSpec* m) {
  const toml::node* node = r.Find("input_shape");
  if (node == nullptr) return;
  const toml::array* list = node->as_array();
  const std::string usage = "must be [channels, height, width] or [features], each >= 1";
  if (list == nullptr || (list->size() != 1 && list->size() != 3)) {
    r.Report(*node, "input_shape", usage + ", got " + Describe(*node));
    return;
  }
  int sides[3] = {1, 1, 1};
  for (std::size_t i = 0; i < list->size(); ++i) {
    std::string problem;
    const std::optional<std::int64_t> v = IntIn((*list)[i], 1, kMaxWidth, &problem);
    if (!v) {
      r.Report((*list)[i], "input_shape",
               usage + ": entry " + std::to_string(i + 1) + " " + problem);
      return;
    }
    sides[i] = static_cast<int>(*v);
  }
  const model::Shape shape{sides[0], sides[1], sides[2]};
  if (shape.Size() > static_cast<std::size_t>(kMaxWidth)) {
    r.Report(*node, "input_shape",
             "holds " + std::to_string(shape.Size()) + " values, more than " +
                 std::to_string(kMaxWidth));
    return;
  }
  m->input_shape = shape;
  m->inputs = static_cast<int>(shape.Size());
}

// One [[model.layers]] table into *layer; false when its type could not be read.
bool ReadLayer(TableReader& r, bool last, model::LayerSpec* layer) {
  const toml::node* type = r.Find("type");
  if (type == nullptr) {
    r.Missing("type", "every layer needs a type: one of " + std::string(model::LayerTypeChoices()));
    return false;
  }
  if (r.Enum("type", model::LayerOfType, model::LayerTypeChoices(), layer) == nullptr) return false;
  switch (layer->kind) {
    case model::LayerKind::kConv2d: {
      if (r.Int("filters", 1, kMaxFilters, &layer->filters) == nullptr && !r.Failed("filters")) {
        r.Missing("filters", "conv2d needs filters (output channels), such as 32");
      }
      if (r.Int("kernel", 1, kMaxSide, &layer->kernel) == nullptr && !r.Failed("kernel")) {
        r.Missing("kernel", "conv2d needs a kernel side, such as 5");
      }
      r.Int("stride", 1, kMaxSide, &layer->stride);
      if (const toml::node* padding = r.Find("padding")) {
        std::string problem;
        if (const auto* text = padding->as_string()) {
          if (text->get() == "same" || text->get() == "valid") {
            layer->padding = text->get() == "same" ? model::kSamePadding : 0;
          } else {
            r.Report(*padding, "padding",
                     "must be \"same\", \"valid\" or a number, got " + Describe(*padding));
          }
        } else if (const auto v = IntIn(*padding, 0, kMaxSide, &problem)) {
          layer->padding = static_cast<int>(*v);
        } else {
          r.Report(*padding, "padding", "must be \"same\", \"valid\" or a number: " + problem);
        }
      }
      r.Enum("activation", model::ParseActivation, model::ActivationChoices(), &layer->activation);
      break;
    }
    case model::LayerKind::kMaxPool2d:
    case model::LayerKind::kAvgPool2d:
      r.Int("size", 1, kMaxSide, &layer->kernel);
      layer->stride = layer->kernel;
      r.Int("stride", 1, kMaxSide, &layer->stride);
      break;
    case model::LayerKind::kDense:
      if (r.Int("units", 1, kMaxWidth, &layer->units) == nullptr && !r.Failed("units") && !last) {
        r.Missing("units", "dense needs units (only the last layer may leave them to the data)");
      }
      r.Enum("activation", model::ParseActivation, model::ActivationChoices(), &layer->activation);
      break;
    case model::LayerKind::kDropout:
      r.Number("rate", ClosedOpen(0, 1), &layer->rate);
      break;
    case model::LayerKind::kBatchNorm:
      r.Number("momentum", OpenClosed(0, 1), &layer->momentum);
      r.Number("eps", OpenClosed(0, 1), &layer->epsilon);
      break;
    case model::LayerKind::kFlatten:
    case model::LayerKind::kActivation:
      break;
  }
  return true;
}

// With the input shape known, each layer must fit the output of the one before it, and the last
// must give a flat vector (the outputs): said at the misfit layer's type, its line and column.
void CheckChain(const model::ModelSpec& m, std::vector<TableReader>& readers) {
  if (std::optional<model::LayerMisfit> misfit = model::FindLayerMisfit(m)) {
    TableReader& r = readers[misfit->index];
    r.Report(*r.table()->get("type"), "type", std::move(misfit->reason));
  }
}

}  // namespace

void ReadLayerList(TableReader& r, Sink& sink, model::ModelSpec* m,
                   std::vector<SourcePlace>* places) {
  const toml::node* node = r.Find("layers");
  if (m->type != model::ModelType::kSequential) {
    if (node != nullptr) r.Report(*node, "layers", "is only allowed for type \"sequential\"");
    if (const toml::node* shape = r.Find("input_shape")) {
      r.Report(*shape, "input_shape", "is only allowed for type \"sequential\"");
    }
    return;
  }
  ReadInputShape(r, m);
  const toml::array* list = node != nullptr ? node->as_array() : nullptr;
  if (node == nullptr || list == nullptr || list->empty() || list->size() > kMaxLayers ||
      !list->is_array_of_tables()) {
    const std::string usage = "type \"sequential\" needs 1 to " + std::to_string(kMaxLayers) +
                              " layers, each a [[model.layers]] table with a type";
    if (node == nullptr) {
      r.Missing("layers", usage);
    } else {
      r.Report(*node, "layers", usage + ", got " + Describe(*node));
    }
    return;
  }
  std::vector<TableReader> readers;
  readers.reserve(list->size());
  std::vector<model::LayerSpec> layers(list->size());
  bool complete = true;
  const std::size_t problems = sink.size();
  for (std::size_t i = 0; i < list->size(); ++i) {
    readers.emplace_back((*list)[i].as_table(), "model.layers[" + std::to_string(i + 1) + "]",
                         sink);
    complete = ReadLayer(readers.back(), i + 1 == list->size(), &layers[i]) && complete;
  }
  // Each layer's unknown keys against its own keys only: another layer's (a conv2d's kernel for
  // a maxpool2d) would be a wrong suggestion.
  for (const TableReader& reader : readers) {
    const TableReader* const layer[] = {&reader};
    RejectUnknown(layer, sink);
  }
  if (!complete) return;
  m->layers = std::move(layers);
  places->clear();
  for (const TableReader& reader : readers) {
    const toml::source_position at = reader.table()->get("type")->source().begin;
    places->push_back({static_cast<int>(at.line), static_cast<int>(at.column)});
  }
  const model::LayerSpec& last = m->layers.back();
  if (m->outputs == 0 && last.kind == model::LayerKind::kDense && last.units > 0) {
    m->outputs = last.units;
  }
  if (sink.size() == problems && m->input_shape.Size() > 0) CheckChain(*m, readers);
}

void WriteLayerList(const model::ModelSpec& m, TomlWriter& w) {
  const model::Shape shape = m.input_shape;
  if (shape.Size() > 0) {
    w.IntArray("input_shape", shape.Flat()
                                  ? std::vector<int>{shape.channels}
                                  : std::vector<int>{shape.channels, shape.height, shape.width});
  }
  for (const model::LayerSpec& layer : m.layers) {
    w.TableOfArray("model.layers");
    w.String("type", model::LayerTypeName(layer));
    switch (layer.kind) {
      case model::LayerKind::kConv2d:
        w.Int("filters", layer.filters);
        w.Int("kernel", layer.kernel);
        w.Int("stride", layer.stride);
        if (layer.padding == model::kSamePadding) {
          w.String("padding", "same");
        } else {
          w.Int("padding", layer.padding);
        }
        w.String("activation", model::ActivationName(layer.activation));
        break;
      case model::LayerKind::kMaxPool2d:
      case model::LayerKind::kAvgPool2d:
        w.Int("size", layer.kernel);
        w.Int("stride", layer.stride);
        break;
      case model::LayerKind::kDense:
        if (layer.units > 0) w.Int("units", layer.units);
        w.String("activation", model::ActivationName(layer.activation));
        break;
      case model::LayerKind::kDropout:
        w.Float("rate", layer.rate);
        break;
      case model::LayerKind::kBatchNorm:
        w.Float("momentum", layer.momentum);
        w.Float("eps", layer.epsilon);
        break;
      case model::LayerKind::kFlatten:
      case model::LayerKind::kActivation:
        break;
    }
  }
}

}  // namespace dtrain::config::internal
