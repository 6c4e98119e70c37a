#include "config/layer_list.h"

#include <memory>
#include <string>
#include <vector>

#include "core/model/layer_type.h"

namespace dtrain::config::internal {
namespace {

constexpr std::int64_t kMaxWidth = model::kMaxLayerWidth;  // the engine's own limit
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

Interval RangeOf(const model::LayerKey& key) {
  return {key.range.lo, key.range.hi, key.range.lo_open, key.range.hi_open};
}

// "same" or "valid" or a number of zeros on each border.
const toml::node* ReadPadding(TableReader& r, const model::LayerKey& key, model::LayerSpec* layer) {
  const toml::node* padding = r.Find(key.name);
  if (padding == nullptr) return nullptr;
  std::string problem;
  if (const auto* text = padding->as_string()) {
    if (text->get() == "same" || text->get() == "valid") {
      layer->*key.int_field = text->get() == "same" ? model::kSamePadding : 0;
      return padding;
    }
    return r.Report(*padding, key.name,
                    "must be \"same\", \"valid\" or a number, got " + Describe(*padding));
  }
  if (const auto v = IntIn(*padding, 0, static_cast<std::int64_t>(key.range.hi), &problem)) {
    layer->*key.int_field = static_cast<int>(*v);
    return padding;
  }
  return r.Report(*padding, key.name, "must be \"same\", \"valid\" or a number: " + problem);
}

// One key of a layer's table into its field: its node, or null when absent or reported.
const toml::node* ReadKey(TableReader& r, const model::LayerKey& key, model::LayerSpec* layer) {
  switch (key.value) {
    case model::LayerKeyValue::kInt:
      if (key.same_as != nullptr) layer->*key.int_field = layer->*key.same_as;
      return r.Int(key.name, static_cast<std::int64_t>(key.range.lo),
                   static_cast<std::int64_t>(key.range.hi), &(layer->*key.int_field));
    case model::LayerKeyValue::kFloat:
      return r.Number(key.name, RangeOf(key), &(layer->*key.float_field));
    case model::LayerKeyValue::kPadding:
      return ReadPadding(r, key, layer);
    case model::LayerKeyValue::kActivation:
      return r.Enum(key.name, model::ParseActivation, model::ActivationChoices(),
                    &layer->activation);
  }
  return nullptr;
}

// One [[model.layers]] table into *layer; false when its type could not be read.
bool ReadLayer(TableReader& r, bool last, model::LayerSpec* layer) {
  const toml::node* type = r.Find("type");
  if (type == nullptr) {
    r.Missing("type", "every layer needs a type: one of " + std::string(model::LayerTypeChoices()));
    return false;
  }
  if (r.Enum("type", model::LayerOfType, model::LayerTypeChoices(), layer) == nullptr) return false;
  for (const model::LayerKey& key : model::LayerTypeOf(layer->kind).keys) {
    const bool needed = key.need == model::LayerKeyNeed::kRequired ||
                        (key.need == model::LayerKeyNeed::kRequiredUnlessLast && !last);
    if (ReadKey(r, key, layer) == nullptr && !r.Failed(key.name) && needed) {
      r.Missing(key.name, std::string(key.missing));
    }
  }
  return true;
}

// One key of a layer as ReadKey reads it; a key the last layer may leave out is left out at 0.
void WriteKey(const model::LayerKey& key, const model::LayerSpec& layer, TomlWriter& w) {
  switch (key.value) {
    case model::LayerKeyValue::kInt:
      if (key.need == model::LayerKeyNeed::kRequiredUnlessLast && layer.*key.int_field == 0) return;
      w.Int(key.name, layer.*key.int_field);
      return;
    case model::LayerKeyValue::kFloat:
      w.Float(key.name, layer.*key.float_field);
      return;
    case model::LayerKeyValue::kPadding:
      if (layer.*key.int_field == model::kSamePadding) {
        w.String(key.name, "same");
      } else {
        w.Int(key.name, layer.*key.int_field);
      }
      return;
    case model::LayerKeyValue::kActivation:
      w.String(key.name, model::ActivationName(layer.activation));
      return;
  }
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
    for (const model::LayerKey& key : model::LayerTypeOf(layer.kind).keys) WriteKey(key, layer, w);
  }
}

}  // namespace dtrain::config::internal
