#include "core/net/frame_stream.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "core/codec/bytes.h"
#include "core/duration_text.h"
#include "core/net/host_info.h"

namespace dtrain::net {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Payload bytes Read reserves before any have arrived; the buffer doubles as they do.
constexpr std::size_t kFirstChunk = 64 << 10;
// iovecs per sendmsg; longer part lists go out over several calls.
constexpr std::size_t kMaxIov = 64;
// How long a transfer that has begun a frame polls for the peer, yielding the core between looks,
// before it sleeps in poll(2): the rest of a frame under way usually follows within microseconds,
// while waking a sleeping thread costs tens of them on virtual hosts (bench/README.md: +9 % for
// a 4 MiB all-reduce between two processes).
constexpr auto kMidFrameYield = std::chrono::microseconds(200);

// One blocking step (a transfer or a wait) that stopped early, and why.
struct IoOutcome {
  std::optional<FrameError> error;
  std::size_t done = 0;  // bytes moved before it stopped
  int error_number = 0;  // for kIo
};

std::string SystemError(int error_number) {
  return std::error_code(error_number, std::system_category()).message();
}

Status StreamError(FrameError error, const std::string& detail) {
  return Status::Error(std::string(FrameErrorName(error)) + ": " + detail);
}

Clock::time_point DeadlineAfter(milliseconds timeout) {
  return Clock::now() + std::max(timeout, milliseconds(0));
}

milliseconds Remaining(Clock::time_point deadline) {
  return std::max(std::chrono::ceil<milliseconds>(deadline - Clock::now()), milliseconds(0));
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

// "127.0.0.1:7070", "[::1]:7070"; empty for other families.
std::string FormatAddress(const sockaddr* addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    return JoinHostPort(text, ntohs(in->sin_port));
  }
  if (addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    return JoinHostPort(text, ntohs(in6->sin6_port));
  }
  return {};
}

std::string DescribePeer(int fd) {
  sockaddr_storage storage{};
  socklen_t len = sizeof storage;
  auto* addr = reinterpret_cast<sockaddr*>(&storage);
  if (fd >= 0 && ::getpeername(fd, addr, &len) == 0) {
    if (addr->sa_family == AF_UNIX) {
      const auto* un = reinterpret_cast<const sockaddr_un*>(addr);
      const std::size_t max_path =
          len > offsetof(sockaddr_un, sun_path) ? len - offsetof(sockaddr_un, sun_path) : 0;
      const std::size_t path_len = ::strnlen(un->sun_path, max_path);
      if (path_len > 0) return "unix:" + std::string(un->sun_path, path_len);
      ucred cred{};
      socklen_t cred_len = sizeof cred;
      if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) == 0 && cred.pid > 0) {
        return "unix peer pid " + std::to_string(cred.pid);
      }
    } else if (std::string text = FormatAddress(addr); !text.empty()) {
      return text;
    }
  }
  return "fd " + std::to_string(fd);
}

// Waits until `fd` is ready for `events`, or the deadline. `mid_frame`: a frame is under way in
// this direction, so poll (yielding) for up to kMidFrameYield before sleeping.
IoOutcome WaitReady(int fd, short events, Clock::time_point deadline, bool mid_frame = false) {
  if (mid_frame) {
    const Clock::time_point until = std::min(deadline, Clock::now() + kMidFrameYield);
    do {
      pollfd p{.fd = fd, .events = events, .revents = 0};
      const int rc = ::poll(&p, 1, 0);
      if (rc > 0 && (p.revents & POLLNVAL) == 0) return {};
      if (rc != 0) break;  // EINTR, or a bad fd: the loop below tells
      std::this_thread::yield();
    } while (Clock::now() < until);
  }
  for (;;) {
    if (Clock::now() >= deadline) return {.error = FrameError::kTimeout};
    const milliseconds left = Remaining(deadline);
    pollfd p{.fd = fd, .events = events, .revents = 0};
    const int rc = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), INT_MAX)));
    if (rc < 0 && errno != EINTR) return {.error = FrameError::kIo, .error_number = errno};
    if (rc > 0) {
      if (p.revents & POLLNVAL) return {.error = FrameError::kIo, .error_number = EBADF};
      return {};  // ready, or an error/hang-up that the next transfer reports precisely
    }
  }
}

// Receives exactly buf.size() bytes by the deadline; `mid_frame`: they continue a frame.
IoOutcome ReceiveAll(int fd, std::span<std::uint8_t> buf, Clock::time_point deadline,
                     bool mid_frame) {
  std::size_t got = 0;
  while (got < buf.size()) {
    const ssize_t n = ::recv(fd, buf.data() + got, buf.size() - got, MSG_DONTWAIT);
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

// Fills `addr` for `path`, or says why it cannot name a Unix socket.
std::optional<std::string> UnixAddress(const std::string& path, sockaddr_un& addr) {
  addr = {};
  addr.sun_family = AF_UNIX;
  if (path.empty()) return "empty unix socket path";
  if (path.size() >= sizeof addr.sun_path) {
    return "unix socket path " + path + " is " + std::to_string(path.size()) +
           " bytes long; at most " + std::to_string(sizeof addr.sun_path - 1) + " fit";
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  return std::nullopt;
}

timeval ToTimeval(milliseconds t) {
  return {.tv_sec = static_cast<time_t>(t.count() / 1000),
          .tv_usec = static_cast<suseconds_t>(t.count() % 1000 * 1000)};
}

}  // namespace

FrameStream::FrameStream(int fd, std::uint32_t max_payload)
    : fd_(fd), max_payload_(max_payload), peer_(DescribePeer(fd)) {}

FrameStream::~FrameStream() { Close(); }

FrameStream::FrameStream(FrameStream&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      max_payload_(other.max_payload_),
      sender_(other.sender_),
      peer_(std::move(other.peer_)),
      last_error_(other.last_error_.load()),
      read_failure_(std::move(other.read_failure_)),
      write_failure_(std::move(other.write_failure_)) {}

FrameStream& FrameStream::operator=(FrameStream&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
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
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<FrameStream> FrameStream::ConnectUnix(const std::string& path, milliseconds timeout,
                                             std::uint32_t max_payload) {
  sockaddr_un addr;
  if (std::optional<std::string> bad = UnixAddress(path, addr)) {
    return StreamError(FrameError::kIo, "cannot connect: " + *bad);
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return StreamError(FrameError::kIo, "cannot create a unix socket: " + SystemError(errno));
  }
  // A Unix connect only waits when the server's backlog is full; SO_SNDTIMEO bounds that wait.
  const Clock::time_point deadline = DeadlineAfter(timeout);
  for (;;) {
    const timeval limit = ToTimeval(std::max(Remaining(deadline), milliseconds(1)));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) break;
    const int e = errno;
    if (e == EINTR && Clock::now() < deadline) continue;
    ::close(fd);
    if (e == EAGAIN || e == EINTR) {
      return StreamError(FrameError::kTimeout,
                         "unix socket " + path + " accepted no connection within " + Ms(timeout));
    }
    return StreamError(FrameError::kIo,
                       "cannot connect to unix socket " + path + ": " + SystemError(e));
  }
  const timeval none{};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none);
  FrameStream stream(fd, max_payload);
  stream.set_peer_name("unix:" + path);
  return stream;
}

Result<FrameStream> FrameStream::ConnectTcp(const std::string& host, std::uint16_t port,
                                            milliseconds timeout, std::uint32_t max_payload) {
  const std::string target = JoinHostPort(host, port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) {
    const std::string why = rc == EAI_SYSTEM ? SystemError(errno) : ::gai_strerror(rc);
    return StreamError(FrameError::kIo, "cannot resolve " + host + ": " + why);
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);

  const Clock::time_point deadline = DeadlineAfter(timeout);
  std::vector<std::string> failures;
  for (const addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
    const std::string address = FormatAddress(ai->ai_addr);
    const int fd =
        ::socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      failures.push_back(address + ": " + SystemError(errno));
      continue;
    }
    int e = ::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ? 0 : errno;
    if (e == EINPROGRESS || e == EINTR) {
      const IoOutcome wait = WaitReady(fd, POLLOUT, deadline);
      if (wait.error == FrameError::kTimeout) {
        ::close(fd);
        return StreamError(FrameError::kTimeout,
                           "no connection to " + target + " within " + Ms(timeout));
      }
      e = wait.error_number;
      socklen_t len = sizeof e;
      if (!wait.error) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len);
    }
    const int one = 1;
    if (e == 0 && ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) e = errno;
    if (e == 0) return FrameStream(fd, max_payload);
    ::close(fd);
    failures.push_back(address + ": " + SystemError(e));
  }
  std::string detail = "cannot connect to ";
  if (failures.size() == 1) {
    detail += failures.front();
  } else {
    detail += target + ":";
    for (std::size_t i = 0; i < failures.size(); ++i) detail += (i ? "; " : " ") + failures[i];
  }
  return StreamError(FrameError::kIo, detail);
}

Status FrameStream::Fail(FrameError error, const std::string& detail) {
  last_error_.store(static_cast<int>(error));
  return StreamError(error, detail);
}

Status FrameStream::Break(std::optional<Failure>& direction, FrameError error,
                          const std::string& detail) {
  Status status = Fail(error, detail);
  direction = Failure{error, status};
  return status;
}

std::optional<Status> FrameStream::CheckUsable(const std::optional<Failure>& direction) {
  if (fd_ < 0) return Fail(FrameError::kClosed, "the stream to " + peer_ + " is closed");
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
  const IoOutcome out = SendAll(fd_, header, payload_parts, DeadlineAfter(timeout));
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
                            std::size_t frame_size, Deadline deadline, milliseconds timeout) {
  const IoOutcome in = ReceiveAll(fd_, buf, deadline, already > 0);
  if (!in.error) return Status::Ok();
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
                                            milliseconds timeout) {
  std::array<std::uint8_t, kHeaderSize> bytes;
  if (Status s = Receive(bytes, 0, kHeaderSize, deadline, timeout); !s.ok()) return s;
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
  Result<FrameHeader> header = ReadHeader(limit, deadline, timeout);
  if (!header.ok()) return header.status();
  const FrameHeader& h = header.value();
  const bool floats = h.type == MessageType::kFloats || h.type == MessageType::kUncheckedFloats;
  if (!floats || h.length != want) {
    return Break(read_failure_, FrameError::kUnexpected,
                 "expected a floats frame of " + std::to_string(want) + " bytes (" +
                     std::to_string(out.size()) + " floats) from " + peer_ + ", got a " +
                     DescribeType(h.type) + " of " + std::to_string(h.length) + " bytes");
  }
  const std::span<std::uint8_t> bytes(reinterpret_cast<std::uint8_t*>(out.data()), want);
  if (Status s = Receive(bytes, kHeaderSize, kHeaderSize + want, deadline, timeout); !s.ok()) {
    return s;
  }
  if (Status s = CheckPayload(h, bytes); !s.ok()) return s;
  last_error_.store(kNoError);
  return header;
}

Result<int> ListenUnix(const std::string& path, int backlog) {
  sockaddr_un addr;
  if (std::optional<std::string> bad = UnixAddress(path, addr)) {
    return Status::Error("cannot listen: " + *bad);
  }
  const auto* sa = reinterpret_cast<const sockaddr*>(&addr);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return Status::Error("cannot listen on " + path + ": it exists and is not a socket");
    }
    // A socket file outlives its server; replace it only when nobody answers on it.
    const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (probe < 0) return Status::Error("cannot create a unix socket: " + SystemError(errno));
    const int e = ::connect(probe, sa, sizeof addr) == 0 ? 0 : errno;
    ::close(probe);
    if (e == 0 || e == EAGAIN) {
      return Status::Error("cannot listen on " + path + ": a running server is listening there");
    }
    if (e != ECONNREFUSED) {
      return Status::Error("cannot check whether " + path + " is in use: " + SystemError(e));
    }
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return Status::Error("cannot remove the stale socket " + path + ": " + SystemError(errno));
    }
  } else if (errno != ENOENT) {
    return Status::Error("cannot listen on " + path + ": " + SystemError(errno));
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Error("cannot create a unix socket: " + SystemError(errno));
  const auto fail = [&](const char* step) {
    const int e = errno;
    ::close(fd);
    return Status::Error("cannot listen on " + path + ": " + step + ": " + SystemError(e));
  };
  if (::bind(fd, sa, sizeof addr) != 0) return fail("bind");
  // Permissions are set before listen(), so no connection is accepted under the umask's mode.
  const char* failed_step = ::chmod(path.c_str(), 0660) != 0 ? "chmod"
                            : ::listen(fd, backlog) != 0     ? "listen"
                                                             : nullptr;
  if (failed_step != nullptr) {
    Status status = fail(failed_step);
    ::unlink(path.c_str());
    return status;
  }
  return fd;
}

}  // namespace dtrain::net
