// Reading a layer-list model's keys: [model] input_shape and the [[model.layers]] tables of
// type = "sequential" (core/model/layer_spec.h). Internal to dtrain_config, like toml_reader.h.
//
//   ReadLayerList(model_reader, sink, &job.model, &job.layer_places);  // before the loss default
//   WriteLayerList(job.model, writer);              // input_shape, then [[model.layers]]
//
// Layers are counted from 1 in keys and messages ("model.layers[3].kernel"). Where the input
// shape is known here (input_shape given), the chain is checked too, and a layer that does not
// fit its input is reported at its table; otherwise the check waits for the data
// (ResolveModelShape). Unknown keys in a layer's table are reported with the keys its type has.
// Each layer's keys are read and written as its LayerType lists them (core/model/layer_type.h):
// nothing here knows a layer type's keys.
#pragma once

#include "config/job.h"
#include "config/toml_reader.h"
#include "core/model/spec.h"

namespace dtrain::config::internal {

// `places` gets where each layer's type is written.
void ReadLayerList(TableReader& model, Sink& sink, model::ModelSpec* m,
                   std::vector<SourcePlace>* places);
// The keys ReadLayerList reads, as it reads them: the [model] section's input_shape (when
// known), then one [[model.layers]] table per layer. Ends the [model] section.
void WriteLayerList(const model::ModelSpec& m, TomlWriter& w);

}  // namespace dtrain::config::internal
