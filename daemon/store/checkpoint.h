// A training checkpoint and its binary encoding, the blob stored in the `checkpoints` table.
// The format is specified in daemon/store/checkpoint_format.md; this file is its only codec.
//
//   std::string blob = EncodeCheckpoint(data);
//   Result<CheckpointData> back = DecodeCheckpoint(blob);   // verifies magic, lengths, CRC32
//
// Decoding never trusts a length beyond the blob it is given: a damaged or hostile blob is an
// error naming the problem, never a crash or a huge allocation. Pure functions: safe for
// concurrent use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/math/buffer.h"
#include "core/status.h"

namespace dtrain::store {

inline constexpr std::uint32_t kCheckpointFormatVersion = 2;  // also reads 1 (no clocks)

struct CheckpointData {
  std::int64_t step = 0;    // optimizer steps completed
  std::uint64_t epoch = 0;  // epochs completed
  std::uint64_t batch = 0;  // batches completed within the current epoch
  std::uint64_t seed = 0;   // the job's seed, so data order resumes exactly
  std::string model_spec;   // model::FormatModelSpec text
  std::uint64_t optimizer_steps = 0;
  math::FloatBuffer params;                        // the flat parameter vector
  std::vector<math::FloatBuffer> optimizer_state;  // Optimizer::StateVectors(), in that order
  // Async parameter servers: the version vector of each shard, clocks[k][w] = the pushes of
  // worker w that shard k had applied (every row the same length); empty for other modes.
  std::vector<std::vector<std::uint64_t>> clocks;
};

std::string EncodeCheckpoint(const CheckpointData& checkpoint);

// The messages name the damage ("bad magic", "checksum mismatch ...", "vector 2 ... truncated")
// but not the job: callers add which checkpoint it was.
Result<CheckpointData> DecodeCheckpoint(std::string_view blob);

// A checksum as shown to users and in messages: "0x1a2b3c4d".
std::string FormatChecksum(std::uint32_t checksum);

// The CRC32 in an encoded checkpoint's trailer (its last four bytes), as EncodeCheckpoint wrote
// it; nullopt for a blob too short to have one. Does not verify anything.
std::optional<std::uint32_t> StoredChecksum(std::string_view blob);

}  // namespace dtrain::store
