// The dtrain wire frame, shared by the control plane (one JSON object per frame) and the data plane
// (raw little-endian float32 arrays): a fixed 32-byte little-endian header, then the payload. The
// grammar is written down in core/net/protocol.md; this file is its codec and nothing else (no
// I/O).
//
//   std::string bytes = EncodeFrame(MessageType::kControl, job, kNoSender, 0, R"({"v":1})");
//   FrameHeader h;
//   if (auto err = DecodeHeader(first_32_bytes, kDefaultMaxPayload, h)) { /* drop the peer */ }
//   ... read exactly h.length payload bytes ...;  if (!PayloadMatches(h, payload)) { /* drop */ }
//
// DecodeHeader refuses a bad magic, another protocol version or an over-long payload before the
// caller allocates anything, so a hostile length costs nothing. Pure functions over values: safe
// for concurrent use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace dtrain::net {

inline constexpr std::size_t kHeaderSize = 32;
inline constexpr std::uint32_t kMagic = 0x4E525444;  // bytes 'D' 'T' 'R' 'N' on the wire
inline constexpr std::uint16_t kProtocolVersion = 1;
inline constexpr std::uint32_t kNoSender = 0xFFFFFFFF;  // a daemon or a client, not a worker
inline constexpr std::uint32_t kDefaultMaxPayload = 64u << 20;
// The payload of a kVersionMismatch frame, the reply to a peer that speaks another version.
inline constexpr std::string_view kVersionMismatchPayload =
    R"({"v":1,"error":"version mismatch","supported":[1]})";

// What a frame carries. Values are wire constants: add new ones, never renumber. A reader passes
// unknown values through; deciding what to do with them is the caller's business.
enum class MessageType : std::uint16_t {
  kControl = 1,            // one UTF-8 JSON object with "v": 1
  kLogLine = 2,            // log output of a worker
  kMetrics = 3,            // metric points of a worker
  kCheckpoint = 4,         // a checkpoint on its way to the coordinator
  kHeartbeat = 5,          // liveness, empty payload allowed
  kBestModel = 6,          // a job's best model on its way to the coordinator
  kFloats = 16,            // raw little-endian float32 array
  kUncheckedFloats = 17,   // kFloats without a checksum: the crc field is 0 and means nothing
  kVersionMismatch = 255,  // payload kVersionMismatchPayload
};
// "control", "floats", ...; "?" for a value this build does not know.
std::string_view MessageTypeName(MessageType type);

struct FrameHeader {
  MessageType type = MessageType::kControl;
  std::uint64_t job = 0;             // 0 when none
  std::uint32_t sender = kNoSender;  // worker rank, or kNoSender
  std::uint32_t tag = 0;             // operation tag / sequence number, 0 when unused
  std::uint32_t length = 0;          // payload bytes
  std::uint32_t crc = 0;             // CRC-32 (zlib) of the payload
  bool operator==(const FrameHeader&) const = default;
};

struct Frame {
  FrameHeader header;
  std::string payload;
};

// Why a frame could not be read or written. kUnexpected: a well-formed frame that the reader did
// not ask for (FrameStream::ReadFloatsInto given another type or size).
enum class FrameError {
  kBadMagic,
  kVersionMismatch,
  kTooLarge,
  kBadChecksum,
  kClosed,
  kTimeout,
  kIo,
  kUnexpected,
};
// "bad magic", "version mismatch", "too large", "bad checksum", "closed", "timeout", "io",
// "unexpected frame": the first words of every error message about that kind of failure.
std::string_view FrameErrorName(FrameError error);

// Writes the header, version kProtocolVersion, into `out`.
void EncodeHeader(const FrameHeader& h, std::span<std::uint8_t, kHeaderSize> out);

// Checks, in this order, the magic, the version (reporting the peer's through *peer_version when
// given) and length <= max_payload. Fills `out` when the magic and version pass, so that on
// kTooLarge it shows what the peer claimed; leaves it alone otherwise. Never allocates.
std::optional<FrameError> DecodeHeader(std::span<const std::uint8_t, kHeaderSize> in,
                                       std::uint32_t max_payload, FrameHeader& out,
                                       std::uint16_t* peer_version = nullptr);

// CRC-32 of a payload given in parts, as if they were one contiguous array.
std::uint32_t PayloadCrc(std::span<const std::span<const std::uint8_t>> parts);

// Whether frames of this type carry their payload's CRC (all but kUncheckedFloats).
constexpr bool HasChecksum(MessageType type) { return type != MessageType::kUncheckedFloats; }

// True when `payload` has the header's length and CRC (a type without a checksum: crc 0).
bool PayloadMatches(const FrameHeader& h, std::span<const std::uint8_t> payload);

// Header plus payload as one string, for small control frames (payload.size() <= 2^32-1).
std::string EncodeFrame(MessageType type, std::uint64_t job, std::uint32_t sender,
                        std::uint32_t tag, std::string_view payload);

// libFuzzer-ready entry (call it from LLVMFuzzerTestOneInput): decodes a header from arbitrary
// bytes and checks the payload that follows. Aborts only when a codec invariant breaks (a header
// that decodes must re-encode to the same 32 bytes). Always returns 0.
int FuzzDecodeFrame(const std::uint8_t* data, std::size_t size);

}  // namespace dtrain::net
