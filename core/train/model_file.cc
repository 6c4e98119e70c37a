#include "core/train/model_file.h"

#include "core/codec/bytes.h"
#include "core/codec/file_bytes.h"
#include "core/model/model.h"

namespace dtrain::train {
namespace {

constexpr std::string_view kMagic{"DTRMODEL", 8};
constexpr std::uint32_t kConstantScaling = 0;
constexpr std::uint32_t kStandardizeScaling = 1;

Status Truncated(std::string_view field) {
  return Status::Error("truncated or damaged: cannot read " + std::string(field));
}

}  // namespace

std::string EncodeModelFile(const ModelFile& m) {
  codec::ByteWriter w;
  w.Reserve(256 + (m.params.size() + 2 * m.scaling.mean.size()) * sizeof(float));
  w.Raw(kMagic);
  w.U32(kModelFormatVersion);
  w.String(model::FormatModelSpec(m.spec));
  w.U64(static_cast<std::uint64_t>(m.step));
  w.String(m.job_name);
  const bool standardize = m.scaling.kind == data::Scaling::Kind::kStandardize;
  w.U32(standardize ? kStandardizeScaling : kConstantScaling);
  w.F32(m.scaling.divisor);
  w.Floats(m.scaling.mean);
  w.Floats(m.scaling.inv_std);
  w.Floats(m.params);
  w.U32(codec::Crc32(w.bytes()));
  return std::move(w).Take();
}

Result<ModelFile> DecodeModelFile(std::string_view bytes) {
  if (bytes.size() < kMagic.size() + 8 || bytes.substr(0, kMagic.size()) != kMagic) {
    return Status::Error("not a dtrain model file (bad magic; expected \"DTRMODEL\")");
  }
  const std::string_view body = bytes.substr(0, bytes.size() - 4);
  codec::ByteReader trailer(bytes.substr(body.size()));
  std::uint32_t stored = 0;
  trailer.U32(stored);
  const std::uint32_t computed = codec::Crc32(body);
  if (stored != computed) {
    return Status::Error("checksum mismatch (the file is damaged or truncated)");
  }

  codec::ByteReader in(body.substr(kMagic.size()));
  std::uint32_t version = 0;
  if (!in.U32(version)) return Truncated("the format version");
  if (version != kModelFormatVersion) {
    return Status::Error("unsupported model format version " + std::to_string(version) +
                         " (this build reads version " + std::to_string(kModelFormatVersion) + ")");
  }
  ModelFile m;
  std::string spec_text;
  std::uint64_t step = 0;
  std::uint32_t scaling_kind = 0;
  if (!in.String(spec_text)) return Truncated("the model spec");
  auto spec = model::ParseModelSpec(spec_text);
  if (!spec.ok()) return spec.status();
  m.spec = spec.value();
  if (!in.U64(step)) return Truncated("the step");
  m.step = static_cast<std::int64_t>(step);
  if (!in.String(m.job_name)) return Truncated("the job name");
  if (!in.U32(scaling_kind) || scaling_kind > kStandardizeScaling) {
    return Truncated("the scaling kind");
  }
  m.scaling.kind = scaling_kind == kStandardizeScaling ? data::Scaling::Kind::kStandardize
                                                       : data::Scaling::Kind::kConstant;
  if (!in.F32(m.scaling.divisor)) return Truncated("the scaling divisor");
  math::FloatBuffer mean, inv_std;
  if (!in.Floats(mean) || !in.Floats(inv_std)) return Truncated("the scaling statistics");
  const auto inputs = static_cast<std::size_t>(m.spec.inputs);
  if (m.scaling.kind == data::Scaling::Kind::kStandardize &&
      (mean.size() != inputs || inv_std.size() != inputs)) {
    return Status::Error("scaling statistics hold " + std::to_string(mean.size()) +
                         " features, the model has " + std::to_string(inputs) + " inputs");
  }
  m.scaling.mean.assign(mean.begin(), mean.end());
  m.scaling.inv_std.assign(inv_std.begin(), inv_std.end());
  if (!in.Floats(m.params)) return Truncated("the parameters");
  const std::size_t expected = model::Model(m.spec).NumParams();
  if (m.params.size() != expected) {
    return Status::Error("holds " + std::to_string(m.params.size()) +
                         " parameters, its model has " + std::to_string(expected));
  }
  if (in.remaining() != 0) {
    return Status::Error(std::to_string(in.remaining()) + " unexpected bytes after the parameters");
  }
  return m;
}

Status WriteModelFile(const std::string& path, const ModelFile& model) {
  return codec::WriteFileAtomically(path, EncodeModelFile(model));
}

Result<ModelFile> ReadModelFile(const std::string& path) {
  Result<std::string> bytes = codec::ReadFileBytes(path);
  if (!bytes.ok()) return bytes.status();
  auto decoded = DecodeModelFile(bytes.value());
  if (!decoded.ok()) return Status::Error(path + ": " + decoded.status().message());
  return decoded;
}

}  // namespace dtrain::train
