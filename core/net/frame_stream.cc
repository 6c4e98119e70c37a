#include "core/net/frame_stream.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <utility>

#include "core/codec/bytes.h"
#include "core/duration_text.h"
#include "core/net/socket.h"

namespace dtrain::net {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Payload bytes Read reserves before any have arrived; the buffer doubles as they do.
constexpr std::size_t kFirstChunk = 64 << 10;
// iovecs per sendmsg; longer part lists go out over several calls.
constexpr std::size_t kMaxIov = 64;

Clock::time_point DeadlineAfter(milliseconds timeout) {
  return Clock::now() + std::max(timeout, milliseconds(0));
}

// "floats frame", or "type-42 frame" for a type this build does not know.
std::string DescribeType(MessageType type) {
  const std::string_view name = MessageTypeName(type);
  if (name == "?") return "type-" + std::to_string(static_cast<unsigned>(type)) + " frame";
  return std::string(name) + " frame";
}

// Bytes as a quoted string, non-printable ones as \xNN: shows what a stranger sent ("GET ").
std::string Quote(std::span<const std::uint8_t> bytes) {
  std::string s = "\"";
  for (std::uint8_t b : bytes) {
    if (b >= 0x20 && b < 0x7f && b != '"' && b != '\\') {
      s += static_cast<char>(b);
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", b);
      s += escaped;
    }
  }
  return s + "\"";
}

// Receives exactly buf.size() bytes by the deadline; `mid_frame`: they continue a frame. In the
// same system calls, whatever of `extra` (the bytes that follow buf's) has come already, never
// waiting for it: `done` counts both.
IoOutcome ReceiveAll(int fd, std::span<std::uint8_t> buf, Clock::time_point deadline,
                     bool mid_frame, std::span<std::uint8_t> extra = {}) {
  std::size_t got = 0;
  while (got < buf.size()) {
    std::array<iovec, 2> iov{iovec{buf.data() + got, buf.size() - got},
                             iovec{extra.data(), extra.size()}};
    msghdr msg{};
    msg.msg_iov = iov.data();
    msg.msg_iovlen = extra.empty() ? 1 : 2;
    const ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) return {.error = FrameError::kClosed, .done = got};
    const int e = errno;
    if (e == EINTR) continue;
    if (e == EAGAIN || e == EWOULDBLOCK) {
      IoOutcome wait = WaitReady(fd, POLLIN, deadline, mid_frame || got > 0);
      if (wait.error) return {.error = wait.error, .done = got, .error_number = wait.error_number};
      continue;
    }
    if (e == ECONNRESET) return {.error = FrameError::kClosed, .done = got};
    return {.error = FrameError::kIo, .done = got, .error_number = e};
  }
  return {.error = std::nullopt, .done = got};
}

// Sends `head` followed by every part by the deadline, gathering up to kMaxIov spans per call.
IoOutcome SendAll(int fd, std::span<const std::uint8_t> head,
                  std::span<const std::span<const std::uint8_t>> parts,
                  Clock::time_point deadline) {
  const auto part_at = [&](std::size_t i) { return i == 0 ? head : parts[i - 1]; };
  const std::size_t count = parts.size() + 1;
  std::size_t total = 0;
  for (std::size_t i = 0; i < count; ++i) total += part_at(i).size();

  std::size_t sent = 0, index = 0, offset = 0;  // next unsent byte: part_at(index)[offset]
  while (sent < total) {
    std::array<iovec, kMaxIov> iov;
    std::size_t used = 0;
    for (std::size_t i = index, skip = offset; i < count && used < kMaxIov; ++i, skip = 0) {
      const std::span<const std::uint8_t> p = part_at(i);
      if (p.size() > skip) {
        iov[used++] = {const_cast<std::uint8_t*>(p.data() + skip), p.size() - skip};
      }
    }
    msghdr msg{};
    msg.msg_iov = iov.data();
    msg.msg_iovlen = used;
    const ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) {
      sent += static_cast<std::size_t>(n);
      for (std::size_t left = static_cast<std::size_t>(n); left > 0;) {
        const std::size_t rest = part_at(index).size() - offset;
        if (left < rest) {
          offset += left;
          left = 0;
        } else {
          left -= rest;
          ++index;
          offset = 0;
        }
      }
      continue;
    }
    const int e = errno;
    if (e == EINTR) continue;
    if (e == EAGAIN || e == EWOULDBLOCK) {
      IoOutcome wait = WaitReady(fd, POLLOUT, deadline, sent > 0);
      if (wait.error) return {.error = wait.error, .done = sent, .error_number = wait.error_number};
      continue;
    }
    if (e == EPIPE || e == ECONNRESET) return {.error = FrameError::kClosed, .done = sent};
    return {.error = FrameError::kIo, .done = sent, .error_number = e};
  }
  return {.error = std::nullopt, .done = sent};
}

}  // namespace

FrameStream::FrameStream(int fd, std::uint32_t max_payload)
    : fd_(fd), max_payload_(max_payload), peer_(DescribePeer(fd)) {}

FrameStream::~FrameStream() { Close(); }

Result<FrameStream> FrameStream::ConnectUnix(const std::string& path, milliseconds timeout,
                                             std::uint32_t max_payload) {
  Result<UniqueFd> fd = ConnectUnixSocket(path, timeout);
  if (!fd.ok()) return fd.status();
  FrameStream stream(std::move(fd).value().release(), max_payload);
  stream.set_peer_name("unix:" + path);
  return stream;
}

Result<FrameStream> FrameStream::ConnectTcp(const std::string& host, std::uint16_t port,
                                            milliseconds timeout, std::uint32_t max_payload) {
  Result<UniqueFd> fd = ConnectTcpSocket(host, port, timeout);
  if (!fd.ok()) return fd.status();
  return FrameStream(std::move(fd).value().release(), max_payload);
}

FrameStream::FrameStream(FrameStream&& other) noexcept
    : fd_(std::move(other.fd_)),
      max_payload_(other.max_payload_),
      sender_(other.sender_),
      peer_(std::move(other.peer_)),
      last_error_(other.last_error_.load()),
      read_failure_(std::move(other.read_failure_)),
      write_failure_(std::move(other.write_failure_)) {}

FrameStream& FrameStream::operator=(FrameStream&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::move(other.fd_);
    max_payload_ = other.max_payload_;
    sender_ = other.sender_;
    peer_ = std::move(other.peer_);
    last_error_.store(other.last_error_.load());
    read_failure_ = std::move(other.read_failure_);
    write_failure_ = std::move(other.write_failure_);
  }
  return *this;
}

void FrameStream::Close() {
  fd_.reset();
}

Status FrameStream::Fail(FrameError error, const std::string& detail) {
  last_error_.store(static_cast<int>(error));
  return FrameFailure(error, detail);
}

Status FrameStream::Break(std::optional<Failure>& direction, FrameError error,
                          const std::string& detail) {
  Status status = Fail(error, detail);
  direction = Failure{error, status};
  return status;
}

std::optional<Status> FrameStream::CheckUsable(const std::optional<Failure>& direction) {
  if (!fd_) return Fail(FrameError::kClosed, "the stream to " + peer_ + " is closed");
  if (direction) {
    last_error_.store(static_cast<int>(direction->error));
    return direction->status;
  }
  return std::nullopt;
}

Status FrameStream::Write(MessageType type, std::uint64_t job, std::uint32_t sender,
                          std::uint32_t tag,
                          std::span<const std::span<const std::uint8_t>> payload_parts,
                          milliseconds timeout) {
  if (std::optional<Status> unusable = CheckUsable(write_failure_)) return *unusable;
  std::uint64_t length = 0;
  for (std::span<const std::uint8_t> part : payload_parts) length += part.size();
  const std::string what = DescribeType(type) + " of " + std::to_string(length) + " bytes";
  if (length > std::numeric_limits<std::uint32_t>::max()) {
    return Fail(FrameError::kTooLarge,
                what + " to " + peer_ + " exceeds the 4294967295-byte limit of the length field");
  }
  const FrameHeader h{.type = type,
                      .job = job,
                      .sender = sender,
                      .tag = tag,
                      .length = static_cast<std::uint32_t>(length),
                      .crc = HasChecksum(type) ? PayloadCrc(payload_parts) : 0};
  std::array<std::uint8_t, kHeaderSize> header;
  EncodeHeader(h, header);
  const IoOutcome out = SendAll(fd_.get(), header, payload_parts, DeadlineAfter(timeout));
  if (!out.error) {
    last_error_.store(kNoError);
    return Status::Ok();
  }
  const std::string progress = " (sent " + std::to_string(out.done) + " of " +
                               std::to_string(kHeaderSize + length) + " bytes)";
  switch (*out.error) {
    case FrameError::kTimeout:
      if (out.done == 0) {
        return Fail(FrameError::kTimeout,
                    "could not send a " + what + " to " + peer_ + " within " + Ms(timeout));
      }
      return Break(
          write_failure_, FrameError::kTimeout,
          "could not send a " + what + " to " + peer_ + " within " + Ms(timeout) + progress);
    case FrameError::kClosed:
      return Break(write_failure_, FrameError::kClosed,
                   peer_ + " closed the connection during a " + what + progress);
    default:
      return Break(write_failure_, FrameError::kIo,
                   "sending a " + what + " to " + peer_ + ": " + SystemError(out.error_number));
  }
}

Status FrameStream::WriteString(MessageType type, std::uint64_t job, std::uint32_t tag,
                                std::string_view payload, milliseconds timeout) {
  const std::span<const std::uint8_t> part(reinterpret_cast<const std::uint8_t*>(payload.data()),
                                           payload.size());
  return Write(type, job, sender_, tag, {&part, 1}, timeout);
}

Status FrameStream::Receive(std::span<std::uint8_t> buf, std::size_t already,
                            std::size_t frame_size, Deadline deadline, milliseconds timeout,
                            std::span<std::uint8_t> extra, std::size_t* extra_got) {
  const IoOutcome in = ReceiveAll(fd_.get(), buf, deadline, already > 0, extra);
  if (!in.error) {
    if (extra_got != nullptr) *extra_got = in.done - buf.size();
    return Status::Ok();
  }
  const std::size_t got = already + in.done;
  const std::string progress =
      " (got " + std::to_string(got) + " of " + std::to_string(frame_size) + " bytes)";
  switch (*in.error) {
    case FrameError::kTimeout:
      if (got == 0) {
        return Fail(FrameError::kTimeout, "no frame within " + Ms(timeout) + " from " + peer_);
      }
      return Break(read_failure_, FrameError::kTimeout,
                   "frame from " + peer_ + " incomplete after " + Ms(timeout) + progress);
    case FrameError::kClosed:
      if (got == 0) {
        return Break(read_failure_, FrameError::kClosed, peer_ + " closed the connection");
      }
      return Break(read_failure_, FrameError::kClosed,
                   peer_ + " closed the connection mid-frame" + progress);
    default:
      return Break(read_failure_, FrameError::kIo,
                   "reading from " + peer_ + ": " + SystemError(in.error_number));
  }
}

Result<FrameHeader> FrameStream::ReadHeader(std::uint32_t max_payload, Deadline deadline,
                                            milliseconds timeout, std::span<std::uint8_t> early,
                                            std::size_t* early_got) {
  std::array<std::uint8_t, kHeaderSize> bytes;
  if (Status s = Receive(bytes, 0, kHeaderSize, deadline, timeout, early, early_got); !s.ok()) {
    return s;
  }
  FrameHeader h;
  std::uint16_t peer_version = 0;
  const std::optional<FrameError> error = DecodeHeader(bytes, max_payload, h, &peer_version);
  if (!error) return h;
  switch (*error) {
    case FrameError::kBadMagic:
      return Break(read_failure_, FrameError::kBadMagic,
                   peer_ + " sent " + Quote(std::span(bytes).first(4)) +
                       " where a frame's \"DTRN\" was expected");
    case FrameError::kVersionMismatch: {
      std::string detail = peer_ + " speaks protocol version " + std::to_string(peer_version) +
                           ", this side speaks " + std::to_string(kProtocolVersion);
      const std::span<const std::uint8_t> reply(
          reinterpret_cast<const std::uint8_t*>(kVersionMismatchPayload.data()),
          kVersionMismatchPayload.size());
      const Status replied =
          Write(MessageType::kVersionMismatch, 0, sender_, 0, {&reply, 1}, Remaining(deadline));
      if (!replied.ok()) detail += " (could not tell it so: " + replied.message() + ")";
      return Break(read_failure_, FrameError::kVersionMismatch, detail);
    }
    default:
      return Break(read_failure_, FrameError::kTooLarge,
                   DescribeType(h.type) + " of " + std::to_string(h.length) + " bytes from " +
                       peer_ + " exceeds the " + std::to_string(max_payload) + "-byte limit");
  }
}

Status FrameStream::CheckPayload(const FrameHeader& h, std::span<const std::uint8_t> payload) {
  if (!HasChecksum(h.type)) {
    if (h.crc == 0) return Status::Ok();
    return Break(read_failure_, FrameError::kBadChecksum,
                 DescribeType(h.type) + " from " + peer_ + " carries no checksum, but its CRC " +
                     "field is " + codec::FormatCrc32(h.crc) + " instead of 0");
  }
  const std::uint32_t crc = PayloadCrc({&payload, 1});
  if (crc == h.crc) return Status::Ok();
  return Break(read_failure_, FrameError::kBadChecksum,
               DescribeType(h.type) + " of " + std::to_string(h.length) + " bytes from " + peer_ +
                   " has CRC " + codec::FormatCrc32(crc) + " but its header says " +
                   codec::FormatCrc32(h.crc));
}

Result<Frame> FrameStream::Read(milliseconds timeout) {
  if (std::optional<Status> unusable = CheckUsable(read_failure_)) return *unusable;
  const Deadline deadline = DeadlineAfter(timeout);
  Result<FrameHeader> header = ReadHeader(max_payload_, deadline, timeout);
  if (!header.ok()) return header.status();
  Frame frame{.header = header.value(), .payload = {}};
  const std::size_t length = frame.header.length;
  const std::size_t frame_size = kHeaderSize + length;
  // Grow with what arrives, so a header that claims much and sends little costs little.
  while (frame.payload.size() < length) {
    const std::size_t got = frame.payload.size();
    frame.payload.resize(std::min(length, std::max(kFirstChunk, 2 * got)));
    const std::span<std::uint8_t> chunk(reinterpret_cast<std::uint8_t*>(frame.payload.data()) + got,
                                        frame.payload.size() - got);
    if (Status s = Receive(chunk, kHeaderSize + got, frame_size, deadline, timeout); !s.ok()) {
      return s;
    }
  }
  const std::span<const std::uint8_t> payload(
      reinterpret_cast<const std::uint8_t*>(frame.payload.data()), frame.payload.size());
  if (Status s = CheckPayload(frame.header, payload); !s.ok()) return s;
  last_error_.store(kNoError);
  return frame;
}

Result<FrameHeader> FrameStream::ReadFloatsInto(std::span<float> out, milliseconds timeout) {
  if (std::optional<Status> unusable = CheckUsable(read_failure_)) return *unusable;
  const Deadline deadline = DeadlineAfter(timeout);
  const std::uint64_t want = out.size_bytes();
  // Nothing is allocated here, so a frame as large as `out` is fine whatever max_payload says.
  const auto limit = static_cast<std::uint32_t>(
      std::clamp<std::uint64_t>(want, max_payload_, std::numeric_limits<std::uint32_t>::max()));
  // The header, and what of the payload came with it in the same system call (one call for a
  // small frame that has arrived whole); past a frame of another size these bytes do not matter.
  const std::span<std::uint8_t> bytes(reinterpret_cast<std::uint8_t*>(out.data()), want);
  std::size_t early = 0;
  Result<FrameHeader> header = ReadHeader(limit, deadline, timeout, bytes, &early);
  if (!header.ok()) return header.status();
  const FrameHeader& h = header.value();
  const bool floats = h.type == MessageType::kFloats || h.type == MessageType::kUncheckedFloats;
  if (!floats || h.length != want) {
    return Break(read_failure_, FrameError::kUnexpected,
                 "expected a floats frame of " + std::to_string(want) + " bytes (" +
                     std::to_string(out.size()) + " floats) from " + peer_ + ", got a " +
                     DescribeType(h.type) + " of " + std::to_string(h.length) + " bytes");
  }
  if (Status s =
          Receive(bytes.subspan(early), kHeaderSize + early, kHeaderSize + want, deadline, timeout);
      !s.ok()) {
    return s;
  }
  if (Status s = CheckPayload(h, bytes); !s.ok()) return s;
  last_error_.store(kNoError);
  return header;
}

}  // namespace dtrain::net
