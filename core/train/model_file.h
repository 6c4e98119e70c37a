// The model file (.dtm): a trained model that stands on its own — spec, feature scaling and
// parameters — written by `dtrain export` and read by `dtrain predict` / `dtrain eval`.
// The byte format is specified in core/train/model_format.md; this file is its only codec.
//
//   Status s = WriteModelFile("model.dtm", {spec, scaling, params, step, "fashion-mlp"});
//   Result<ModelFile> m = ReadModelFile("model.dtm");   // verifies magic, sizes, CRC32
//
// A damaged, truncated or foreign file is an error naming the file and the problem, never a
// crash or an allocation of a size the file does not hold. Pure functions: safe for
// concurrent use.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/data/dataset.h"
#include "core/math/buffer.h"
#include "core/model/spec.h"
#include "core/status.h"

namespace dtrain::train {

inline constexpr std::uint32_t kModelFormatVersion = 1;

struct ModelFile {
  model::ModelSpec spec;
  data::Scaling scaling;     // applied to raw features before the model, as in training
  math::FloatBuffer params;  // Model(spec).NumParams() floats
  std::int64_t step = 0;     // the training step the parameters are from
  std::string job_name;
};

std::string EncodeModelFile(const ModelFile& model);
// Messages name the problem but not the file (ReadModelFile adds it).
Result<ModelFile> DecodeModelFile(std::string_view bytes);

// Writes to a temporary file beside `path`, fsyncs and renames, so `path` is never half-written.
Status WriteModelFile(const std::string& path, const ModelFile& model);
Result<ModelFile> ReadModelFile(const std::string& path);

}  // namespace dtrain::train
