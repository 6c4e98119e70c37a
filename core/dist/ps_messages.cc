#include "core/dist/ps_messages.h"

#include <cstdio>

#include "core/dist/float_slots.h"

namespace dtrain::dist {
namespace {

// Slot layout of the header (ps_protocol.md).
enum Slot : std::size_t {
  kMagic = 0,
  kFrom = 1,
  kVote = 2,
  kLr = 3,
  kClock = 4,  // u64: 4, 5
  kBasis = 6,  // u64: 6, 7
  kRows = 8,
  kTotalRows = 9,
  kNumParams = 10,  // u64: 10, 11
  kBegin = 12,      // u64: 12, 13
  kEnd = 14,        // u64: 14, 15
  kSteps = 16,      // u64: 16, 17
  kShard = 18,
  kShards = 19,
  kWorkers = 20,
  kMode = 21,
  kMaxStaleness = 22,
  kStateVectors = 23,
  kFlags = 24,
  kMembership = 25,
  kPosition = 26,
  kMembers = 27,
};
static_assert(kMembers + 1 == kPsHeaderFloats);

}  // namespace

std::string_view PsModeName(PsMode mode) { return mode == PsMode::kSync ? "sync" : "async"; }

std::string PsTagName(std::uint32_t tag) {
  const std::uint32_t kind = tag & 0x7F;
  const bool ours = (tag & ~std::uint32_t{0x1FF}) == kPsTagBase && kind >= 1 &&
                    kind <= static_cast<std::uint32_t>(kPsLastMessage);
  if (!ours) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "tag 0x%08x", tag);
    return buf;
  }
  static constexpr const char* kNames[] = {"",         "hello",   "push",    "fetch",
                                           "snapshot", "goodbye", "residual"};
  std::string name = kNames[kind];
  if (tag & kPsReplyBit) name += " reply";
  if (tag & kPsDataBit) name += " data";
  return name;
}

void EncodePsHeader(const PsHeader& h, std::span<float, kPsHeaderFloats> out) {
  PutU32(out, kMagic, kPsMagic);
  PutU32(out, kFrom, h.from);
  PutU32(out, kVote, h.vote);
  out[kLr] = h.lr;
  PutU64(out, kClock, h.clock);
  PutU64(out, kBasis, h.basis);
  PutU32(out, kRows, h.rows);
  PutU32(out, kTotalRows, h.total_rows);
  PutU64(out, kNumParams, h.num_params);
  PutU64(out, kBegin, h.begin);
  PutU64(out, kEnd, h.end);
  PutU64(out, kSteps, h.steps);
  PutU32(out, kShard, h.shard);
  PutU32(out, kShards, h.shards);
  PutU32(out, kWorkers, h.workers);
  PutU32(out, kMode, h.mode);
  PutU32(out, kMaxStaleness, h.max_staleness);
  PutU32(out, kStateVectors, h.state_vectors);
  PutU32(out, kFlags, h.flags);
  PutU32(out, kMembership, h.membership);
  PutU32(out, kPosition, h.position);
  PutU32(out, kMembers, h.members);
}

Result<PsHeader> DecodePsHeader(std::span<const float, kPsHeaderFloats> in) {
  if (Status magic = CheckMagic(in, kMagic, kPsMagic, "parameter-server"); !magic.ok()) {
    return magic;
  }
  PsHeader h;
  h.from = GetU32(in, kFrom);
  h.vote = GetU32(in, kVote);
  h.lr = in[kLr];
  h.clock = GetU64(in, kClock);
  h.basis = GetU64(in, kBasis);
  h.rows = GetU32(in, kRows);
  h.total_rows = GetU32(in, kTotalRows);
  h.num_params = GetU64(in, kNumParams);
  h.begin = GetU64(in, kBegin);
  h.end = GetU64(in, kEnd);
  h.steps = GetU64(in, kSteps);
  h.shard = GetU32(in, kShard);
  h.shards = GetU32(in, kShards);
  h.workers = GetU32(in, kWorkers);
  h.mode = GetU32(in, kMode);
  h.max_staleness = GetU32(in, kMaxStaleness);
  h.state_vectors = GetU32(in, kStateVectors);
  h.flags = GetU32(in, kFlags);
  h.membership = GetU32(in, kMembership);
  h.position = GetU32(in, kPosition);
  h.members = GetU32(in, kMembers);
  return h;
}

}  // namespace dtrain::dist
