#include "core/net/frame.h"

#include <cassert>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/codec/bytes.h"
#include "core/name_table.h"

namespace dtrain::net {
namespace {

constexpr NameTable<MessageType, 9> kMessageTypes{
    {{{MessageType::kControl, "control"},
      {MessageType::kLogLine, "log line"},
      {MessageType::kMetrics, "metrics"},
      {MessageType::kCheckpoint, "checkpoint"},
      {MessageType::kHeartbeat, "heartbeat"},
      {MessageType::kBestModel, "best model"},
      {MessageType::kFloats, "floats"},
      {MessageType::kUncheckedFloats, "unchecked floats"},
      {MessageType::kVersionMismatch, "version mismatch"}}},
    "control, log line, metrics, checkpoint, heartbeat, best model, floats, unchecked floats, "
    "version mismatch"};

constexpr NameTable<FrameError, 8> kFrameErrors{
    {{{FrameError::kBadMagic, "bad magic"},
      {FrameError::kVersionMismatch, "version mismatch"},
      {FrameError::kTooLarge, "too large"},
      {FrameError::kBadChecksum, "bad checksum"},
      {FrameError::kClosed, "closed"},
      {FrameError::kTimeout, "timeout"},
      {FrameError::kIo, "io"},
      {FrameError::kUnexpected, "unexpected frame"}}},
    "bad magic, version mismatch, too large, bad checksum, closed, timeout, io, unexpected frame"};

// The version and type fields are two consecutive little-endian u16s, which is exactly one
// little-endian u32 with the version in its low half; codec's reader and writer work in u32s.
constexpr std::uint32_t PackVersionAndType(std::uint16_t version, MessageType type) {
  return std::uint32_t{version} | std::uint32_t{static_cast<std::uint16_t>(type)} << 16;
}

std::string_view AsChars(std::span<const std::uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace

std::string_view MessageTypeName(MessageType type) { return kMessageTypes.Name(type); }

std::string_view FrameErrorName(FrameError error) { return kFrameErrors.Name(error); }

void EncodeHeader(const FrameHeader& h, std::span<std::uint8_t, kHeaderSize> out) {
  codec::ByteWriter w;
  w.Reserve(kHeaderSize);
  w.U32(kMagic);
  w.U32(PackVersionAndType(kProtocolVersion, h.type));
  w.U64(h.job);
  w.U32(h.sender);
  w.U32(h.tag);
  w.U32(h.length);
  w.U32(h.crc);
  std::memcpy(out.data(), w.bytes().data(), kHeaderSize);
}

std::optional<FrameError> DecodeHeader(std::span<const std::uint8_t, kHeaderSize> in,
                                       std::uint32_t max_payload, FrameHeader& out,
                                       std::uint16_t* peer_version) {
  codec::ByteReader r(AsChars(in));
  std::uint32_t magic = 0, version_and_type = 0;
  FrameHeader h;
  // Fixed size: every read below succeeds, so only the field checks can fail.
  r.U32(magic);
  r.U32(version_and_type);
  r.U64(h.job);
  r.U32(h.sender);
  r.U32(h.tag);
  r.U32(h.length);
  r.U32(h.crc);
  if (magic != kMagic) return FrameError::kBadMagic;
  const auto version = static_cast<std::uint16_t>(version_and_type & 0xffff);
  if (version != kProtocolVersion) {
    if (peer_version != nullptr) *peer_version = version;
    return FrameError::kVersionMismatch;
  }
  h.type = static_cast<MessageType>(version_and_type >> 16);
  out = h;
  if (h.length > max_payload) return FrameError::kTooLarge;
  return std::nullopt;
}

std::uint32_t PayloadCrc(std::span<const std::span<const std::uint8_t>> parts) {
  std::uint32_t crc = 0;
  for (std::span<const std::uint8_t> part : parts) crc = codec::Crc32Update(crc, AsChars(part));
  return crc;
}

bool PayloadMatches(const FrameHeader& h, std::span<const std::uint8_t> payload) {
  if (payload.size() != h.length) return false;
  return HasChecksum(h.type) ? codec::Crc32(AsChars(payload)) == h.crc : h.crc == 0;
}

std::string EncodeFrame(MessageType type, std::uint64_t job, std::uint32_t sender,
                        std::uint32_t tag, std::string_view payload) {
  assert(payload.size() <= std::numeric_limits<std::uint32_t>::max());
  FrameHeader h{.type = type,
                .job = job,
                .sender = sender,
                .tag = tag,
                .length = static_cast<std::uint32_t>(payload.size()),
                .crc = HasChecksum(type) ? codec::Crc32(payload) : 0};
  std::string frame(kHeaderSize + payload.size(), '\0');
  EncodeHeader(h, std::span<std::uint8_t, kHeaderSize>(
                      reinterpret_cast<std::uint8_t*>(frame.data()), kHeaderSize));
  std::memcpy(frame.data() + kHeaderSize, payload.data(), payload.size());
  return frame;
}

int FuzzDecodeFrame(const std::uint8_t* data, std::size_t size) {
  if (size < kHeaderSize) return 0;
  const std::span<const std::uint8_t, kHeaderSize> header(data, kHeaderSize);
  FrameHeader h;
  if (DecodeHeader(header, kDefaultMaxPayload, h).has_value()) return 0;
  std::uint8_t again[kHeaderSize];
  EncodeHeader(h, again);
  if (std::memcmp(again, data, kHeaderSize) != 0) std::abort();
  const std::span<const std::uint8_t> rest(data + kHeaderSize, size - kHeaderSize);
  if (rest.size() < h.length) return 0;
  // The payload checked whole and checked as two parts must agree.
  const std::span<const std::uint8_t> payload = rest.first(h.length);
  const std::span<const std::uint8_t> halves[] = {payload.first(payload.size() / 2),
                                                  payload.subspan(payload.size() / 2)};
  const bool matches = HasChecksum(h.type) ? PayloadCrc(halves) == h.crc : h.crc == 0;
  if (PayloadMatches(h, payload) != matches) std::abort();
  return 0;
}

}  // namespace dtrain::net
