// The messages of Sandblaster (core/dist/sandblaster_protocol.md): one header of kSbHeaderFloats
// floats, sometimes followed by one data message (a slice of a vector), over Links. The
// coordinator orders vector operations on the shards; workers fetch parameters from and push
// gradients to the shards; the coordinator hands work units to workers.
//
//   SbHeader h{.kind = SbKind::kDot, .a = kG, .b = kD};
//   Status s = SendSb(link, h, {}, deadline);
//   Result<SbHeader> reply = RecvSb(link, SbReply(SbKind::kDot), deadline);
//
// Fields are u32/u64 bit patterns and doubles in float slots (float_slots.h), never raw structs.
// Pure functions apart from the link I/O.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "core/dist/link.h"
#include "core/status.h"

namespace dtrain::dist {

enum class SbKind : std::uint32_t {
  // coordinator -> shard (replies: the same kind | kSbReplyBit where one is listed)
  kDot = 1,         // a . b over the slice; reply value = the partial sum
  kAxpy = 2,        // b += value * a
  kScale = 3,       // a *= value
  kCopy = 4,        // b = a
  kBeginPass = 5,   // pass; a = the point workers fetch; zero the gradient sum; reply: ready
  kFinishPass = 6,  // pass; b = (sum of pushes) / count + value * W(a); reply value = the partial
                    // value/2 |W(a)|^2 (weights only)
  kLoad = 7,        // a = the vector its data (a slice) goes to
  kSnapshot = 8,    // a = the vector; reply: its slice as data
  // worker -> shard
  kFetch = 10,  // pass; reply: the slice of the pass's point as data, or kSbStale
  kPush = 11,   // pass; data: the slice of a gradient sum; reply: added (or kSbStale: not, the
                // pass is over)
  // either -> shard, and worker -> coordinator: the sender is done
  kGoodbye = 12,
  // worker -> coordinator
  kReady = 20,   // waiting for its first order
  kDone = 21,    // pass, unit; value = loss sum, count = correct rows (of that unit)
  kPushed = 22,  // pass; value, count: the loss sum and correct rows of the units pushed;
                 // flags kSbAwaitingOrder when it pushed on a kFlush order
  // coordinator -> worker
  kOrder = 30,   // pass; flags: what to do (SbOrderFlags), unit, rows [first, last)
};

inline constexpr std::uint32_t kSbTagBase = 0x53420000;  // "SB" in the high half
inline constexpr std::uint32_t kSbReplyBit = 0x80;
inline constexpr std::uint32_t kSbDataBit = 0x100;
constexpr std::uint32_t SbTag(SbKind k) { return kSbTagBase | static_cast<std::uint32_t>(k); }
constexpr std::uint32_t SbReply(SbKind k) { return SbTag(k) | kSbReplyBit; }
constexpr std::uint32_t SbData(std::uint32_t header_tag) { return header_tag | kSbDataBit; }

// kOrder flags.
inline constexpr std::uint32_t kSbCompute = 1;      // compute `unit`
inline constexpr std::uint32_t kSbFlush = 2;        // push the accumulator (first, when computing)
inline constexpr std::uint32_t kSbStop = 4;         // the run is over: say goodbye and end
inline constexpr std::uint32_t kSbAccepted = 8;     // verdict on the last kDone: keep it
inline constexpr std::uint32_t kSbDrop = 16;        // verdict: zero the accumulator first
inline constexpr std::uint32_t kSbBackup = 32;      // `unit` runs elsewhere too
inline constexpr std::uint32_t kSbAwaitingOrder = 1;  // kPushed
// A fetch reply (no data follows) and a kDone: the pass is over (its units were all done
// elsewhere before this worker fetched), so the unit was not computed.
inline constexpr std::uint32_t kSbStale = 64;

inline constexpr std::size_t kSbHeaderFloats = 18;
inline constexpr std::uint32_t kSbMagic = 0x31764253;  // the bytes 'S' 'B' 'v' '1'

struct SbHeader {
  SbKind kind = SbKind::kGoodbye;
  std::uint32_t from = 0;  // the sender's rank (shard index in shard replies)
  std::uint32_t a = 0, b = 0;  // vector indices
  double value = 0.0;
  std::uint64_t pass = 0;
  std::uint64_t count = 0;
  std::uint32_t unit = 0;
  std::uint32_t flags = 0;
  std::uint64_t first = 0, last = 0;  // kOrder: the unit's rows
};

void EncodeSb(const SbHeader& h, std::span<float, kSbHeaderFloats> out);
// Fails on a wrong magic.
Result<SbHeader> DecodeSb(std::span<const float, kSbHeaderFloats> in);

// Sends the header (tagged SbTag(kind), or SbReply(kind) when `reply`) and, when `data` is not
// empty, a data message after it (tagged SbData of the header's tag).
Status SendSb(Link& link, const SbHeader& h, std::span<const float> data, Deadline deadline,
              bool reply = false);
// Receives a header, which must be tagged `tag`.
Result<SbHeader> RecvSb(Link& link, std::uint32_t tag, Deadline deadline);
// Receives any header; its tag in *tag.
Result<SbHeader> RecvAnySb(Link& link, std::uint32_t* tag, Deadline deadline);

// The deadline of a wait with no natural end (the coordinator's next order, a worker's next
// request): the peer's death or Close ends it, and the daemon's heartbeat finds a stalled process.
inline Deadline NoDeadline() { return Clock::now() + std::chrono::hours(24 * 365); }

// "dot", "begin pass", ... for messages.
std::string SbKindName(SbKind kind);

}  // namespace dtrain::dist
