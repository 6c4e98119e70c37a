// ONNX export: a trained model file — dense (train::ModelFile) or sparse
// (sparse::SparseModelFile) — as an ONNX model that runtimes load without dtrain: ONNX IR version
// 7, opset 13 (loaded by every onnxruntime since 1.6). The graph's layout — the input with the
// job's feature scaling inside, each layer's form, the outputs — is in core/onnx/onnx_format.md.
//
//   Result<std::string> bytes = EncodeOnnx(model_file);          // the serialized ModelProto
//   Status s = codec::WriteFileAtomically("model.onnx", bytes.value());
//
// Every model built passes onnx's checker and its strict shape inference (types checked) before
// it is returned; a model that fails them is a bug, returned as an error that begins "internal
// error". A sparse model whose index space is larger than kMaxSparseInputs is refused with the
// reason. Pure functions; the protobuf and onnx headers stay in this folder's .cc files.
#pragma once

#include <cstdint>
#include <string>

#include "core/sparse/sparse_model_file.h"
#include "core/status.h"
#include "core/train/model_file.h"

namespace dtrain::onnx_export {

inline constexpr std::int64_t kIrVersion = 7;
inline constexpr std::int64_t kOpsetVersion = 13;
// A sparse model's ONNX input is a dense vector over its whole index space (2^hash_bits, or the
// data's features): at most this many values (the weights then take 4 MiB a slot float).
inline constexpr std::uint64_t kMaxSparseInputs = std::uint64_t{1} << 20;

Result<std::string> EncodeOnnx(const train::ModelFile& model);
Result<std::string> EncodeSparseOnnx(const sparse::SparseModelFile& model);

}  // namespace dtrain::onnx_export
