#include "daemon/store/checkpoint.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <limits>
#include <string>

#include "core/codec/bytes.h"

namespace dtrain::store {
namespace {

// The grammar these constants follow is daemon/store/checkpoint_format.md.
constexpr std::string_view kMagic{"DTRAINCK", 8};
// magic, version, step, epoch, batch, seed, spec length, optimizer steps, vector count, CRC.
constexpr std::size_t kFixedSize = 8 + 4 + 8 + 8 + 8 + 8 + 8 + 8 + 4 + 4;
constexpr std::size_t kCrcSize = 4;
// Version 2: the version vectors' dimensions (shards, workers) after the last vector.
constexpr std::size_t kClockHeaderSize = 4 + 4;
// Version 3: the early-stopping state after the clocks: best (binary64), best step, since best.
constexpr std::size_t kEarlyStoppingSize = 8 + 8 + 8;

std::uint32_t LoadU32(std::string_view bytes) {
  std::uint32_t v = 0;
  codec::ByteReader(bytes).U32(v);
  return v;
}

// The fields a CheckpointData and a CheckpointView share, but their vectors.
template <typename From, typename To>
void CopyHeader(const From& from, To& to) {
  to.step = from.step;
  to.epoch = from.epoch;
  to.batch = from.batch;
  to.seed = from.seed;
  to.model_spec = from.model_spec;
  to.optimizer_steps = from.optimizer_steps;
  to.early_stopping = from.early_stopping;
}

}  // namespace

CheckpointView ViewOf(const CheckpointData& c) {
  CheckpointView v;
  CopyHeader(c, v);
  v.params = c.params;
  for (const math::FloatBuffer& state : c.optimizer_state) v.optimizer_state.emplace_back(state);
  v.clocks = c.clocks;
  return v;
}

void CopyCheckpoint(const CheckpointView& from, CheckpointData& to) {
  CopyHeader(from, to);
  to.params.assign(from.params.begin(), from.params.end());
  to.optimizer_state.resize(from.optimizer_state.size());
  for (std::size_t i = 0; i < from.optimizer_state.size(); ++i) {
    to.optimizer_state[i].assign(from.optimizer_state[i].begin(), from.optimizer_state[i].end());
  }
  to.clocks.assign(from.clocks.begin(), from.clocks.end());
}

CheckpointData HeaderOf(const CheckpointView& v) {
  CheckpointData c;
  CopyHeader(v, c);
  return c;
}

std::string EncodeCheckpoint(const CheckpointData& checkpoint) {
  return EncodeCheckpoint(ViewOf(checkpoint));
}

std::string EncodeCheckpoint(const CheckpointView& checkpoint) {
  const std::size_t clock_shards = checkpoint.clocks.size();
  const std::size_t clock_workers = clock_shards == 0 ? 0 : checkpoint.clocks.front().size();
  std::size_t size = kFixedSize + checkpoint.model_spec.size() + 8 +
                     checkpoint.params.size() * sizeof(float) + kClockHeaderSize +
                     clock_shards * clock_workers * 8 + kEarlyStoppingSize;
  for (const auto& v : checkpoint.optimizer_state) size += 8 + v.size() * sizeof(float);
  const std::size_t vectors = 1 + checkpoint.optimizer_state.size();
  assert(vectors <= std::numeric_limits<std::uint32_t>::max());
  assert(clock_shards <= std::numeric_limits<std::uint32_t>::max() &&
         clock_workers <= std::numeric_limits<std::uint32_t>::max());

  codec::ByteWriter out;
  out.Reserve(size);
  out.Raw(kMagic);
  out.U32(kCheckpointFormatVersion);
  out.U64(static_cast<std::uint64_t>(checkpoint.step));
  out.U64(checkpoint.epoch);
  out.U64(checkpoint.batch);
  out.U64(checkpoint.seed);
  out.String(checkpoint.model_spec);
  out.U64(checkpoint.optimizer_steps);
  out.U32(static_cast<std::uint32_t>(vectors));
  out.Floats(checkpoint.params);
  for (const auto& v : checkpoint.optimizer_state) out.Floats(v);
  out.U32(static_cast<std::uint32_t>(clock_shards));
  out.U32(static_cast<std::uint32_t>(clock_workers));
  for (const auto& row : checkpoint.clocks) {
    assert(row.size() == clock_workers);
    for (std::uint64_t clock : row) out.U64(clock);
  }
  out.U64(std::bit_cast<std::uint64_t>(checkpoint.early_stopping.best));
  out.U64(static_cast<std::uint64_t>(checkpoint.early_stopping.best_step));
  out.U64(static_cast<std::uint64_t>(checkpoint.early_stopping.since_best));
  out.U32(codec::Crc32(out.bytes()));
  assert(out.bytes().size() == size);
  return std::move(out).Take();
}

Result<CheckpointData> DecodeCheckpoint(std::string_view blob) {
  const std::string size_text = std::to_string(blob.size()) + " bytes";
  if (blob.size() < kMagic.size() + 4) {
    return Status::Error("not a checkpoint: only " + size_text);
  }
  if (blob.substr(0, kMagic.size()) != kMagic) {
    return Status::Error("not a checkpoint: bad magic (expected \"DTRAINCK\")");
  }
  const std::uint32_t version = LoadU32(blob.substr(kMagic.size()));
  if (version < 1 || version > kCheckpointFormatVersion) {
    return Status::Error("unsupported checkpoint format version " + std::to_string(version) +
                         " (this build reads versions 1 to " +
                         std::to_string(kCheckpointFormatVersion) + ")");
  }
  if (blob.size() < kFixedSize) {
    return Status::Error("checkpoint truncated: " + size_text + ", the fixed fields alone take " +
                         std::to_string(kFixedSize));
  }
  const std::string_view body = blob.substr(0, blob.size() - kCrcSize);
  const std::uint32_t stored = LoadU32(blob.substr(body.size()));
  const std::uint32_t computed = codec::Crc32(body);
  if (stored != computed) {
    return Status::Error("checksum mismatch: stored " + FormatChecksum(stored) + ", computed " +
                         FormatChecksum(computed) + " over " + size_text +
                         " (the checkpoint is corrupted or truncated)");
  }

  // From here on the bytes are what the writer wrote; the length checks still guard against a
  // writer bug or a crafted blob with a valid CRC. The fixed-size fields are all present
  // (checked above), so their reads cannot fail.
  codec::ByteReader in(body.substr(kMagic.size() + 4));
  CheckpointData out;
  std::uint64_t step = 0, spec_size = 0;
  in.U64(step);
  out.step = static_cast<std::int64_t>(step);
  in.U64(out.epoch);
  in.U64(out.batch);
  in.U64(out.seed);
  in.U64(spec_size);
  // What must still follow the spec: optimizer steps and the vector count.
  std::string_view spec;
  if (in.remaining() < 12 || spec_size > in.remaining() - 12 ||
      !in.Raw(static_cast<std::size_t>(spec_size), spec)) {
    return Status::Error("model spec length " + std::to_string(spec_size) + " exceeds the " +
                         std::to_string(in.remaining()) + " bytes left");
  }
  out.model_spec.assign(spec);
  std::uint32_t vectors = 0;
  in.U64(out.optimizer_steps);
  in.U32(vectors);
  if (vectors == 0) return Status::Error("checkpoint holds no parameter vector");
  if (vectors > in.remaining() / 8) {
    return Status::Error("vector count " + std::to_string(vectors) + " exceeds what the " +
                         std::to_string(in.remaining()) + " bytes left can hold");
  }
  out.optimizer_state.resize(vectors - 1);
  for (std::uint32_t i = 0; i < vectors; ++i) {
    math::FloatBuffer& v = i == 0 ? out.params : out.optimizer_state[i - 1];
    if (!in.Floats(v)) {
      return Status::Error("vector " + std::to_string(i) + " claims more floats than the " +
                           std::to_string(in.remaining()) + " bytes left (or lacks its length)");
    }
  }
  if (version >= 2) {
    std::uint32_t shards = 0, workers = 0;
    if (!in.U32(shards) || !in.U32(workers)) {
      return Status::Error("the version vectors' dimensions are missing after the last vector");
    }
    const std::uint64_t count = std::uint64_t{shards} * workers;
    if (count > in.remaining() / 8) {
      return Status::Error("version vectors of " + std::to_string(shards) + " x " +
                           std::to_string(workers) + " clocks exceed the " +
                           std::to_string(in.remaining()) + " bytes left");
    }
    out.clocks.assign(shards, std::vector<std::uint64_t>(workers));
    for (auto& row : out.clocks) {
      for (std::uint64_t& clock : row) in.U64(clock);
    }
  }
  if (version >= 3) {
    std::uint64_t best = 0, best_step = 0, since_best = 0;
    if (!in.U64(best) || !in.U64(best_step) || !in.U64(since_best)) {
      return Status::Error("the early-stopping state is missing after the version vectors");
    }
    out.early_stopping = {std::bit_cast<double>(best), static_cast<std::int64_t>(best_step),
                          static_cast<std::int64_t>(since_best)};
  }
  if (in.remaining() != 0) {
    return Status::Error(std::to_string(in.remaining()) + " unexpected bytes after the " +
                         (version >= 3   ? "early-stopping state"
                          : version >= 2 ? "version vectors"
                                         : "last vector"));
  }
  return out;
}

Result<CheckpointData> MergeCheckpointParts(std::vector<CheckpointData> parts) {
  if (parts.empty()) return Status::Error("no parts to merge");
  CheckpointData whole = std::move(parts.front());
  for (std::size_t p = 1; p < parts.size(); ++p) {
    const CheckpointData& part = parts[p];
    if (part.step != whole.step || part.epoch != whole.epoch || part.batch != whole.batch ||
        part.optimizer_state.size() != whole.optimizer_state.size()) {
      return Status::Error("partition " + std::to_string(p) + "'s part is of step " +
                           std::to_string(part.step) + ", partition 0's of step " +
                           std::to_string(whole.step));
    }
    whole.params.insert(whole.params.end(), part.params.begin(), part.params.end());
    for (std::size_t v = 0; v < part.optimizer_state.size(); ++v) {
      whole.optimizer_state[v].insert(whole.optimizer_state[v].end(),
                                      part.optimizer_state[v].begin(),
                                      part.optimizer_state[v].end());
    }
    whole.clocks.insert(whole.clocks.end(), part.clocks.begin(), part.clocks.end());
    whole.optimizer_steps = std::max(whole.optimizer_steps, part.optimizer_steps);
  }
  return whole;
}

CheckpointData SliceCheckpoint(const CheckpointData& whole, std::size_t begin, std::size_t end,
                               std::size_t first_clock, std::size_t clocks) {
  CheckpointData part;
  CopyHeader(whole, part);
  part.params.assign(whole.params.begin() + static_cast<std::ptrdiff_t>(begin),
                     whole.params.begin() + static_cast<std::ptrdiff_t>(end));
  for (const math::FloatBuffer& v : whole.optimizer_state) {
    part.optimizer_state.emplace_back(v.begin() + static_cast<std::ptrdiff_t>(begin),
                                      v.begin() + static_cast<std::ptrdiff_t>(end));
  }
  for (std::size_t k = first_clock; k < first_clock + clocks && k < whole.clocks.size(); ++k) {
    part.clocks.push_back(whole.clocks[k]);
  }
  return part;
}

std::string FormatChecksum(std::uint32_t checksum) { return codec::FormatCrc32(checksum); }

std::optional<std::uint32_t> StoredChecksum(std::string_view blob) {
  if (blob.size() < kCrcSize) return std::nullopt;
  return LoadU32(blob.substr(blob.size() - kCrcSize));
}

std::string EncodeBestModelFrame(double value, const CheckpointView& model) {
  codec::ByteWriter out;
  out.U64(std::bit_cast<std::uint64_t>(value));
  out.Raw(EncodeCheckpoint(model));
  return std::move(out).Take();
}

Result<BestModelFrame> DecodeBestModelFrame(std::string_view payload) {
  codec::ByteReader in(payload);
  std::uint64_t bits = 0;
  if (!in.U64(bits))
    return Status::Error("a best model frame of " + std::to_string(payload.size()) + " bytes");
  Result<CheckpointData> model = DecodeCheckpoint(payload.substr(in.position()));
  if (!model.ok()) return model.status();
  return BestModelFrame{std::bit_cast<double>(bits), std::move(model).value()};
}

}  // namespace dtrain::store
