// Fuzz target: the frame decoder (core/net/frame.h) and the blocking frame reader that uses it
// (core/net/frame_stream.h). Each input is (1) decoded by FuzzDecodeFrame, which checks that a
// header that decodes re-encodes to the same bytes and that the CRC agrees whole and in parts;
// (2) written into a socketpair whose far end is then shut, and read back as frames with
// FrameStream::Read until it fails; (3) the same through ReadFloatsInto, sized from the first
// header so that well-formed floats frames get through. Invariants: no crash, no leak, no
// allocation of a claimed length that never arrives (scripts/fuzz sets -malloc_limit_mb), a
// read that failed keeps failing with the same error, and a frame read back re-encodes to its
// own bytes.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/net/frame.h"
#include "core/net/frame_stream.h"

namespace {

using namespace dtrain::net;
using namespace std::chrono_literals;

constexpr std::size_t kMaxFed = 64 << 10;  // well inside a socketpair's buffer

// A connected pair: the returned stream reads what `data` holds, then sees the peer's EOF.
// -1 peer on failure (the caller skips the input).
struct Fed {
  int peer = -1;
  int reader = -1;
};

Fed Feed(const std::uint8_t* data, std::size_t size) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return {};
  ::fcntl(fds[1], F_SETFL, O_NONBLOCK);
  std::size_t sent = 0;
  const std::size_t want = std::min(size, kMaxFed);
  while (sent < want) {
    const ssize_t n = ::send(fds[1], data + sent, want - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(fds[1], SHUT_WR);
  return {fds[1], fds[0]};
}

void ReadAll(const std::uint8_t* data, std::size_t size) {
  Fed fed = Feed(data, size);
  if (fed.peer < 0) return;
  {
    FrameStream stream(fed.reader);
    for (std::size_t i = 0; i <= size / kHeaderSize + 1; ++i) {
      dtrain::Result<Frame> frame = stream.Read(1s);
      if (!frame.ok()) {
        const auto error = stream.LastError();
        if (!error) __builtin_trap();
        // A broken direction stays broken, with the same error.
        dtrain::Result<Frame> again = stream.Read(1s);
        if (again.ok() || stream.LastError() != error) __builtin_trap();
        break;
      }
      const Frame& f = frame.value();
      const std::string bytes = EncodeFrame(f.header.type, f.header.job, f.header.sender,
                                            f.header.tag, f.payload);
      FrameHeader h;
      const std::span<const std::uint8_t, kHeaderSize> head(
          reinterpret_cast<const std::uint8_t*>(bytes.data()), kHeaderSize);
      if (DecodeHeader(head, kDefaultMaxPayload, h) || !(h == f.header)) __builtin_trap();
    }
  }
  ::close(fed.peer);
}

void ReadFloats(const std::uint8_t* data, std::size_t size) {
  if (size < kHeaderSize) return;
  std::uint32_t length = 0;
  std::memcpy(&length, data + 24, sizeof length);
  const std::size_t count = std::min<std::size_t>(length / sizeof(float), 1 << 14);
  std::vector<float> out(count);
  Fed fed = Feed(data, size);
  if (fed.peer < 0) return;
  {
    FrameStream stream(fed.reader, /*max_payload=*/1024);
    for (int i = 0; i < 4; ++i) {
      if (!stream.ReadFloatsInto(out, 1s).ok()) break;
    }
  }
  ::close(fed.peer);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzDecodeFrame(data, size);
  if (size >= kHeaderSize) {
    // A small limit: the length check itself, and what DecodeHeader fills on kTooLarge.
    FrameHeader h;
    std::uint16_t version = 0;
    const auto error = DecodeHeader(std::span<const std::uint8_t, kHeaderSize>(data, kHeaderSize),
                                    64, h, &version);
    if (error == FrameError::kTooLarge && h.length <= 64) __builtin_trap();
    (void)MessageTypeName(h.type);
    if (error) (void)FrameErrorName(*error);
  }
  ReadAll(data, size);
  ReadFloats(data, size);
  return 0;
}
