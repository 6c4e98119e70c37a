// The parameter-server protocol's messages (ps_protocol.md): the tags of requests, replies and
// their data, and the header every one of them starts with, encoded field by field into floats —
// what a shard (parameter_shard.h, sparse_shard.h) and a worker (ps_client.h, sparse_ps_client.h)
// exchange.
//
//   std::array<float, kPsHeaderFloats> out;
//   EncodePsHeader({.from = rank, .clock = c}, out);
//   Result<PsHeader> back = DecodePsHeader(out);   // fails unless it starts with kPsMagic
//
// Invariants: tag values, slot positions and the magic are the wire protocol: never renumber them.
// Pure functions, safe for concurrent use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"

namespace dtrain::dist {

enum class PsMode : std::uint32_t { kSync = 0, kAsync = 1 };
std::string_view PsModeName(PsMode mode);  // "sync", "async"

// Request kinds; a reply's tag and the data messages' tags derive from them.
enum class PsMessage : std::uint32_t {
  kHello = 1,
  kPush = 2,
  kFetch = 3,
  kSnapshot = 4,
  kGoodbye = 5,
  kResidual = 6,  // sync, compressed pushes: a worker's error-feedback residual for a checkpoint
};
inline constexpr PsMessage kPsLastMessage = PsMessage::kResidual;

inline constexpr std::uint32_t kPsTagBase = 0x50530000;  // "PS" in the high half
inline constexpr std::uint32_t kPsReplyBit = 0x80;
inline constexpr std::uint32_t kPsDataBit = 0x100;
constexpr std::uint32_t PsRequestTag(PsMessage m) {
  return kPsTagBase | static_cast<std::uint32_t>(m);
}
constexpr std::uint32_t PsReplyTag(PsMessage m) { return PsRequestTag(m) | kPsReplyBit; }
// The tag of the float arrays that follow a header tagged `header_tag`.
constexpr std::uint32_t PsDataTag(std::uint32_t header_tag) { return header_tag | kPsDataBit; }
// "push", "push reply", "push data", ... or "tag 0x..." for a tag outside the protocol.
std::string PsTagName(std::uint32_t tag);

// A stop vote on the wire: 0 for none, else train::StopVote's value (the most urgent vote is the
// largest: requested 3 > target reached 2 > early stopped 1).
inline constexpr std::uint32_t kNoVote = 0;

// Every request and reply starts with one header message of kPsHeaderFloats floats. Fields a
// message does not use are zero. Encoded field by field (little-endian u32 bit patterns in the
// float slots; u64 as two u32, low word first; lr as a float), never as a raw struct.
inline constexpr std::size_t kPsHeaderFloats = 28;
inline constexpr std::uint32_t kPsMagic = 0x31765350;  // the bytes 'P' 'S' 'v' '1'

struct PsHeader {
  std::uint32_t from = 0;        // worker rank (requests) or shard index (replies)
  std::uint32_t vote = kNoVote;  // push: the worker's vote; push reply: the agreed vote
  float lr = 0.0f;               // push: the learning rate to apply it with
  std::uint64_t clock = 0;       // see ps_protocol.md, per message
  std::uint64_t basis = 0;       // push (async): g_f; fetch reply: pushes applied in total
  std::uint32_t rows = 0;        // push (sync): this worker's rows of the step; hello with
                                 // kPsSparsePushes: the pairs of each compressed push
  std::uint32_t total_rows = 0;  // push (sync): every worker's rows; sparse push: its batch's
  std::uint64_t num_params = 0;  // hello, hello reply: n, the whole vector's length
  std::uint64_t begin = 0;       // hello, hello reply: the shard's range
  std::uint64_t end = 0;
  std::uint64_t steps = 0;  // hello and snapshot reply: the shard optimizer's steps
  std::uint32_t shard = 0;  // hello, hello reply
  std::uint32_t shards = 0;
  std::uint32_t workers = 0;
  std::uint32_t mode = 0;           // PsMode
  std::uint32_t max_staleness = 0;  // hello, hello reply: async, s; sync, the backup workers
  std::uint32_t state_vectors = 0;  // snapshot reply: optimizer state vectors that follow
  std::uint32_t flags = 0;  // hello: kPsWantParams, an encoding; hello reply: the same if taken;
                            // push: kPsEncodedPush, kPsCheckpoint, kPsTakeAll; push reply:
                            // kPsCheckpoint; any reply: kPsRegroup
  // Elastic jobs (ps_protocol.md, "Elastic jobs"): hello and hello reply: the membership's epoch,
  // this worker's position in it (also its `from`) and the membership's size; 0 elsewhere.
  std::uint32_t membership = 0;
  std::uint32_t position = 0;
  std::uint32_t members = 0;
};
inline constexpr std::uint32_t kPsWantParams = 1;
// Compressed pushes (ps_protocol.md): hello flags saying how this worker encodes its compressed
// pushes to the shard — bf16 values, or `rows` top-k pairs — echoed by the hello reply; and the
// push flag saying that a push's data is so encoded (else it is the raw slice).
inline constexpr std::uint32_t kPsBf16Pushes = 2;
inline constexpr std::uint32_t kPsSparsePushes = 4;
inline constexpr std::uint32_t kPsEncodedPush = 8;
// Sync: a push's flag proposing a checkpoint after this step; the push reply's flag saying that
// some worker proposed one (every worker then sends its residual, ps_protocol.md "Residuals").
inline constexpr std::uint32_t kPsCheckpoint = 16;
// Sync with backup workers: a push's flag saying that its step takes every worker's gradient
// (the epoch's last step, the run's; ps_protocol.md "Backup workers").
inline constexpr std::uint32_t kPsTakeAll = 64;
// Elastic jobs: a reply's flag (no data follows it) saying that the worker's membership lost a
// member, so the worker regroups instead of going on (ps_protocol.md, "Elastic jobs").
inline constexpr std::uint32_t kPsRegroup = 32;

void EncodePsHeader(const PsHeader& header, std::span<float, kPsHeaderFloats> out);
// Fails on a wrong magic (the message is not a parameter-server header).
Result<PsHeader> DecodePsHeader(std::span<const float, kPsHeaderFloats> in);

}  // namespace dtrain::dist
