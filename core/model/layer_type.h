// LayerType: everything about one kind of layer in one place: its job-file type names and the
// LayerSpec each starts as, its keys (each key's value type, range and need, which is how the
// job file reads and writes it and how the model spec text formats and parses it), and the
// factory that checks the layer against its input and builds its compute Layer (whose output()
// is the layer's shape rule), and its form in an exported graph (ONNX).
//
//   constexpr LayerKey kKeys[] = {IntKey("units", &LayerSpec::units, 1, kMaxLayerWidth)};
//   extern constexpr LayerType kDenseLayer{LayerKind::kDense, kNames, kKeys, MakeDense,
//                                          WriteGraphOf<Dense>};
//
// Each file of core/model/layers/ defines its types; layers/layer_types.cc lists them all.
// Invariants: every LayerKind has exactly one LayerType, listed once; type names are unique
// across types; a type's keys are in the order they are written, in the spec text and in the
// job file, and their names are string literals. Descriptors are constants (no start-up code).
// Nothing outside a layer's file and these generic readers and writers switches on its kind.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/model/layer.h"

namespace dtrain::model {

inline constexpr int kMaxLayerWidth = 1 << 24;  // values per sample: larger is a typo, not a model
inline constexpr int kMaxWindowSide = 1024;     // kernels, strides and pool windows

// How a key's value is kept in its LayerSpec field and spelled in text.
enum class LayerKeyValue {
  kInt,         // int_field: an integer in [range.lo, range.hi]
  kFloat,       // float_field: a number in range, its ends open where range says
  kPadding,     // int_field: "same" (kSamePadding), "valid" (0, job file only) or [0, range.hi]
  kActivation,  // LayerSpec::activation: an activation's name
};

// When a job file may leave a key out (it then keeps the type's starting value).
enum class LayerKeyNeed {
  kOptional,
  kRequired,
  kRequiredUnlessLast,  // the last layer may leave it 0 (to the data) and it is then not written
};

struct KeyRange {
  double lo = 0.0, hi = 0.0;
  bool lo_open = false, hi_open = false;
};

struct LayerKey {
  std::string_view name{};
  LayerKeyValue value = LayerKeyValue::kInt;
  int LayerSpec::*int_field = nullptr;
  float LayerSpec::*float_field = nullptr;
  KeyRange range{};
  LayerKeyNeed need = LayerKeyNeed::kOptional;
  std::string_view missing{};  // what a job file that leaves out a needed key is told
  // Job file: a left-out key takes this field's value (read before it), not the type's start.
  int LayerSpec::*same_as = nullptr;

  constexpr LayerKey Required(std::string_view why) const {
    LayerKey key = *this;
    key.need = LayerKeyNeed::kRequired;
    key.missing = why;
    return key;
  }
  constexpr LayerKey RequiredUnlessLast(std::string_view why) const {
    LayerKey key = Required(why);
    key.need = LayerKeyNeed::kRequiredUnlessLast;
    return key;
  }
  constexpr LayerKey SameAs(int LayerSpec::*field) const {
    LayerKey key = *this;
    key.same_as = field;
    return key;
  }
};

constexpr LayerKey IntKey(std::string_view name, int LayerSpec::*field, int lo, int hi) {
  return {.name = name,
          .value = LayerKeyValue::kInt,
          .int_field = field,
          .range = {static_cast<double>(lo), static_cast<double>(hi)}};
}
constexpr LayerKey FloatKey(std::string_view name, float LayerSpec::*field, KeyRange range) {
  return {.name = name, .value = LayerKeyValue::kFloat, .float_field = field, .range = range};
}
constexpr LayerKey PaddingKey(std::string_view name, int LayerSpec::*field, int hi) {
  return {.name = name,
          .value = LayerKeyValue::kPadding,
          .int_field = field,
          .range = {0.0, static_cast<double>(hi)}};
}
constexpr LayerKey ActivationKey(std::string_view name) {
  return {.name = name, .value = LayerKeyValue::kActivation};
}

// A job-file type name and the LayerSpec a layer of that name starts as (its defaults).
struct LayerSpelling {
  std::string_view name;
  LayerSpec start;
};

using MakeLayerFunction = Result<std::unique_ptr<Layer>> (*)(const LayerSpec& spec, Shape input,
                                                             int outputs);

class GraphWriter;  // graph_writer.h

// A layer's inference form in an exported graph (graph_writer.h): `in`, a value of the layer's
// input shape, becomes the returned value of its output shape. `layer` is one its type's make
// built; `params` are its NumParams() floats.
using WriteGraphFunction = std::string (*)(const Layer& layer, const float* params,
                                           const std::string& in, GraphWriter& graph);

// The WriteGraphFunction of a layer class L with a member of that form (params, in, graph).
template <typename L>
std::string WriteGraphOf(const Layer& layer, const float* params, const std::string& in,
                         GraphWriter& graph) {
  return static_cast<const L&>(layer).WriteGraph(params, in, graph);
}

struct LayerType {
  LayerKind kind;
  std::span<const LayerSpelling> spellings;
  std::span<const LayerKey> keys;
  MakeLayerFunction make;  // as MakeLayer (layer.h)
  WriteGraphFunction write_graph;  // dropout: the identity; batchnorm: its running statistics
  // The layer in a few words for people (model_summary.h): "conv2d 32x3x3 relu", "dense 10"
  // (`outputs` stands for units left 0); null: its type name alone.
  std::string (*summary)(const LayerSpec& layer, int outputs) = nullptr;
  // The type is named by its activation (relu, tanh, sigmoid), one spelling each.
  bool named_by_activation = false;
};

// " relu", or nothing for identity: how a summary ends for a layer with an activation.
std::string SummaryActivation(math::Activation activation);

// Every layer type, in the order job-file messages list their names.
std::span<const LayerType* const> LayerTypes();
// The type of a kind (every kind has one).
const LayerType& LayerTypeOf(LayerKind kind);

}  // namespace dtrain::model
