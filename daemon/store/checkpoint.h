// A training checkpoint and its binary encoding, the blob stored in the `checkpoints` table.
// The format is specified in daemon/store/checkpoint_format.md; this file is its only codec.
//
//   std::string blob = EncodeCheckpoint(data);              // or of a CheckpointView: no copy
//   Result<CheckpointData> back = DecodeCheckpoint(blob);   // verifies magic, lengths, CRC32
//
// Decoding never trusts a length beyond the blob it is given: a damaged or hostile blob is an
// error naming the problem, never a crash or a huge allocation. Pure functions: safe for
// concurrent use.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/math/buffer.h"
#include "core/status.h"
#include "core/train/early_stopping.h"

namespace dtrain::store {

// Also reads 2 (no early-stopping state) and 1 (no clocks either).
inline constexpr std::uint32_t kCheckpointFormatVersion = 3;

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
  // train.early_stopping's state after the step (the default, no best, when it is off or the
  // checkpoint is older than version 3).
  train::EarlyStoppingState early_stopping;
};

// A checkpoint to encode whose vectors stay where they are (a trainer's own parameters and
// optimizer state): encoding it copies nothing first. The viewed memory must not change until
// EncodeCheckpoint returns.
struct CheckpointView {
  std::int64_t step = 0;
  std::uint64_t epoch = 0;
  std::uint64_t batch = 0;
  std::uint64_t seed = 0;
  std::string model_spec;
  std::uint64_t optimizer_steps = 0;
  std::span<const float> params;
  std::vector<std::span<const float>> optimizer_state;
  std::span<const std::vector<std::uint64_t>> clocks;
  train::EarlyStoppingState early_stopping;
};

CheckpointView ViewOf(const CheckpointData& checkpoint);
// Makes `to` a copy of `from`, reusing the vectors `to` holds: once their sizes are reached, a copy
// allocates nothing (an elastic local replica's copy of its state after each average).
void CopyCheckpoint(const CheckpointView& from, CheckpointData& to);
// The view's step, position, seed, model, optimizer steps and early-stopping state, without its
// vectors.
CheckpointData HeaderOf(const CheckpointView& view);

std::string EncodeCheckpoint(const CheckpointView& checkpoint);
std::string EncodeCheckpoint(const CheckpointData& checkpoint);

// The messages name the damage ("bad magic", "checksum mismatch ...", "vector 2 ... truncated")
// but not the job: callers add which checkpoint it was.
Result<CheckpointData> DecodeCheckpoint(std::string_view blob);

// A `best model` frame's payload (daemon/control_protocol.md): the judged metric's value as an
// IEEE-754 double (the bits as a little-endian u64), then the model's checkpoint blob.
struct BestModelFrame {
  double value = 0.0;
  CheckpointData model;
};
std::string EncodeBestModelFrame(double value, const CheckpointView& model);
Result<BestModelFrame> DecodeBestModelFrame(std::string_view payload);

// Model parallelism: a replica's K partitions each capture their part of a checkpoint (their range
// of the partition-major parameter vector, their optimizer state, their shards' clocks); the job's
// checkpoint joins the parts in partition order, and a partition resumes from its slice.
// MergeCheckpointParts: every part at the same step and position, with as many state vectors;
// its params and state vectors are concatenated, its clocks too (partition p's shards follow
// partition p - 1's), and its optimizer_steps is the largest. SliceCheckpoint: params and state
// [begin, end), clock rows [first_clock, first_clock + clocks) (an empty checkpoint's clocks stay
// empty).
Result<CheckpointData> MergeCheckpointParts(std::vector<CheckpointData> parts);
CheckpointData SliceCheckpoint(const CheckpointData& whole, std::size_t begin, std::size_t end,
                               std::size_t first_clock, std::size_t clocks);

// A checksum as shown to users and in messages: "0x1a2b3c4d".
std::string FormatChecksum(std::uint32_t checksum);

// The CRC32 in an encoded checkpoint's trailer (its last four bytes), as EncodeCheckpoint wrote
// it; nullopt for a blob too short to have one. Does not verify anything.
std::optional<std::uint32_t> StoredChecksum(std::string_view blob);

}  // namespace dtrain::store
