#include "core/sparse/sparse_model_file.h"

#include <unordered_set>

#include "core/codec/bytes.h"
#include "core/codec/file_bytes.h"

namespace dtrain::sparse {
namespace {

constexpr std::string_view kMagic{"DTRSPARS", 8};

Status Truncated(std::string_view field) {
  return Status::Error("truncated or damaged: cannot read " + std::string(field));
}

}  // namespace

bool IsSparseModelFile(std::string_view bytes) { return bytes.substr(0, kMagic.size()) == kMagic; }

std::string EncodeSparseModelFile(const SparseModelFile& f) {
  codec::ByteWriter w;
  w.Reserve(256 + f.keys.size() * 4 + (f.slots.size() + f.globals.size()) * sizeof(float));
  w.Raw(kMagic);
  w.U32(kSparseModelFormatVersion);
  w.String(FormatSparseModelSpec(f.spec));
  w.U32(static_cast<std::uint32_t>(f.hash_bits));
  w.U64(f.features);
  w.U64(static_cast<std::uint64_t>(f.step));
  w.String(f.job_name);
  w.U64(f.keys.size());
  for (const std::uint32_t key : f.keys) w.U32(key);
  w.Floats(f.slots);
  w.Floats(f.globals);
  w.U32(codec::Crc32(w.bytes()));
  return std::move(w).Take();
}

Result<SparseModelFile> DecodeSparseModelFile(std::string_view bytes) {
  if (bytes.size() < kMagic.size() + 8 || !IsSparseModelFile(bytes)) {
    return Status::Error("not a dtrain sparse model file (bad magic; expected \"DTRSPARS\")");
  }
  const std::string_view body = bytes.substr(0, bytes.size() - 4);
  codec::ByteReader trailer(bytes.substr(body.size()));
  std::uint32_t stored = 0;
  trailer.U32(stored);
  if (stored != codec::Crc32(body)) {
    return Status::Error("checksum mismatch (the file is damaged or truncated)");
  }
  codec::ByteReader in(body.substr(kMagic.size()));
  std::uint32_t version = 0, hash_bits = 0;
  if (!in.U32(version)) return Truncated("the format version");
  if (version != kSparseModelFormatVersion) {
    return Status::Error("unsupported sparse model format version " + std::to_string(version) +
                         " (this build reads version " + std::to_string(kSparseModelFormatVersion) +
                         ")");
  }
  SparseModelFile f;
  std::string spec_text;
  std::uint64_t step = 0, keys = 0;
  if (!in.String(spec_text)) return Truncated("the model spec");
  Result<SparseModelSpec> spec = ParseSparseModelSpec(spec_text);
  if (!spec.ok()) return spec.status();
  f.spec = spec.value();
  if (!in.U32(hash_bits) || hash_bits > 32) return Truncated("the hash bits");
  f.hash_bits = static_cast<int>(hash_bits);
  if (!in.U64(f.features) || !in.U64(step)) return Truncated("the feature count and step");
  f.step = static_cast<std::int64_t>(step);
  if (!in.String(f.job_name)) return Truncated("the job name");
  if (!in.U64(keys) || keys > in.remaining() / 4) return Truncated("the keys");
  f.keys.resize(keys);
  for (std::uint32_t& key : f.keys) in.U32(key);
  math::FloatBuffer slots, globals;
  if (!in.Floats(slots) || !in.Floats(globals)) return Truncated("the parameters");
  const SparseModel model(f.spec);
  if (slots.size() != keys * model.SlotWidth() || globals.size() != model.GlobalWidth()) {
    return Status::Error("holds " + std::to_string(slots.size()) + " slot values for " +
                         std::to_string(keys) + " keys and " + std::to_string(globals.size()) +
                         " globals, which its model does not have");
  }
  if (in.remaining() != 0) {
    return Status::Error(std::to_string(in.remaining()) + " unexpected bytes after the parameters");
  }
  std::unordered_set<std::uint32_t> seen(f.keys.begin(), f.keys.end());
  if (seen.size() != f.keys.size()) return Status::Error("a key repeats");
  f.slots.assign(slots.begin(), slots.end());
  f.globals.assign(globals.begin(), globals.end());
  return f;
}

Status WriteSparseModelFile(const std::string& path, const SparseModelFile& file) {
  return codec::WriteFileAtomically(path, EncodeSparseModelFile(file));
}

}  // namespace dtrain::sparse
