// How dtrain export and dtrain convert write a model: as a dtrain model file (.dtm,
// core/train/model_format.md) or as ONNX (core/onnx/onnx_export.h), always atomically.
//
//   Status s = WriteModelAs("model.onnx", "onnx", model_file);
//
// An error is either the model refused by the format (a sparse model too large for ONNX) or the
// write failing; the caller says which model it was. Pure functions apart from the file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/sparse/sparse_model_file.h"
#include "core/status.h"
#include "core/train/model_file.h"

namespace dtrain::cli {

// The formats, for --format: "dtm" (the default) and "onnx".
const std::vector<std::string>& ModelFormats();

Status WriteModelAs(const std::string& path, std::string_view format,
                    const train::ModelFile& model);
Status WriteModelAs(const std::string& path, std::string_view format,
                    const sparse::SparseModelFile& model);

}  // namespace dtrain::cli
