#include "cmd/model_output.h"

#include "core/codec/file_bytes.h"
#include "core/onnx/onnx_export.h"

namespace dtrain::cli {
namespace {

Status WriteBytes(const std::string& path, const Result<std::string>& bytes) {
  if (!bytes.ok()) return bytes.status();
  return codec::WriteFileAtomically(path, bytes.value());
}

}  // namespace

const std::vector<std::string>& ModelFormats() {
  static const std::vector<std::string> formats{"dtm", "onnx"};
  return formats;
}

Status WriteModelAs(const std::string& path, std::string_view format,
                    const train::ModelFile& model) {
  if (format == "onnx") return WriteBytes(path, onnx_export::EncodeOnnx(model));
  return train::WriteModelFile(path, model);
}

Status WriteModelAs(const std::string& path, std::string_view format,
                    const sparse::SparseModelFile& model) {
  if (format == "onnx") return WriteBytes(path, onnx_export::EncodeSparseOnnx(model));
  return sparse::WriteSparseModelFile(path, model);
}

}  // namespace dtrain::cli
