// FrameStream: blocking frame I/O with deadlines over one connected stream socket (Unix or TCP),
// for the CLI and the worker processes (the daemon runs Asio and uses only core/net/frame.h).
// Opening sockets, and listening, is socket.h's.
//
//   Result<FrameStream> s = FrameStream::ConnectUnix("/run/dtrain/ctl.sock", 5s);
//   if (!s.ok()) return s.status();
//   Status w = s.value().WriteString(MessageType::kControl, 0, 1, R"({"v":1,"op":"list"})", 5s);
//   Result<Frame> reply = s.value().Read(5s);  // "timeout: no frame within 5000 ms from ..."
//
// Each timeout bounds the whole operation (one frame), not one system call, so a peer that
// dribbles a byte at a time still hits it. Float arrays move without staging copies: Write
// gathers the payload from several spans (sendmsg), ReadFloatsInto receives straight into the
// caller's floats. A frame that failed half-way (a timeout, a close, a protocol error) leaves that
// direction unusable: every later call in it fails with the same error; a read that timed out
// before the first byte of a frame arrived can simply be retried. A dead peer is an error value,
// never SIGPIPE. Full duplex: one thread may read while another writes (the two directions keep
// separate state); two concurrent reads, or two concurrent writes, are not allowed. A stream may
// be moved to another thread while no call runs.
#pragma once

#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <string_view>

#include "core/net/frame.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace dtrain::net {

static_assert(std::endian::native == std::endian::little,
              "kFloats frames carry float32 in host byte order, which must be little-endian");

// The bytes of a float array as they go on the wire, e.g. one payload part for Write.
inline std::span<const std::uint8_t> FloatBytes(std::span<const float> values) {
  return {reinterpret_cast<const std::uint8_t*>(values.data()), values.size_bytes()};
}

class FrameStream {
 public:
  // Takes ownership of `fd` (closed by the destructor). `max_payload` bounds what Read accepts,
  // checked before anything is allocated; ReadFloatsInto, which allocates nothing, also accepts a
  // frame of exactly its output's size. Writes are bounded only by the u32 length field.
  explicit FrameStream(int fd, std::uint32_t max_payload = kDefaultMaxPayload);
  ~FrameStream();
  FrameStream(FrameStream&& other) noexcept;
  FrameStream& operator=(FrameStream&& other) noexcept;
  FrameStream(const FrameStream&) = delete;
  FrameStream& operator=(const FrameStream&) = delete;

  static Result<FrameStream> ConnectUnix(const std::string& path, std::chrono::milliseconds timeout,
                                         std::uint32_t max_payload = kDefaultMaxPayload);
  // Sets TCP_NODELAY. `host` is an address literal or a name; a name is resolved by the system
  // resolver first, whose own timeouts (resolv.conf) bound that step, not `timeout`.
  static Result<FrameStream> ConnectTcp(const std::string& host, std::uint16_t port,
                                        std::chrono::milliseconds timeout,
                                        std::uint32_t max_payload = kDefaultMaxPayload);

  // Sends one frame whose payload is the concatenation of `payload_parts` (none copied).
  Status Write(MessageType type, std::uint64_t job, std::uint32_t sender, std::uint32_t tag,
               std::span<const std::span<const std::uint8_t>> payload_parts,
               std::chrono::milliseconds timeout);
  // One-part Write from this stream's sender (set_sender).
  Status WriteString(MessageType type, std::uint64_t job, std::uint32_t tag,
                     std::string_view payload, std::chrono::milliseconds timeout);

  // Reads one whole frame, of any type (a kVersionMismatch frame from the peer included). When
  // the peer speaks another protocol version, first replies with a kVersionMismatch frame, then
  // fails. The payload buffer grows with the bytes that actually arrive, up to max_payload.
  Result<Frame> Read(std::chrono::milliseconds timeout);
  // Reads a kFloats (or kUncheckedFloats) frame of exactly out.size() floats straight into `out`;
  // any other type or size fails with kUnexpected, naming both sizes. On failure `out` holds unspecified values.
  Result<FrameHeader> ReadFloatsInto(std::span<float> out, std::chrono::milliseconds timeout);

  // What the most recent Read/ReadFloatsInto/Write/WriteString failed with; nullopt after a
  // success.
  std::optional<FrameError> LastError() const {
    const int error = last_error_.load();
    return error == kNoError ? std::nullopt : std::optional(static_cast<FrameError>(error));
  }

  int fd() const { return fd_.get(); }
  // Gives the socket up to the caller, who then owns it (e.g. to hand it to another process);
  // later calls fail with kClosed. Only between frames: nothing may be half read or written.
  int Release() { return fd_.release(); }
  // How errors name the other end: "unix:/path", "127.0.0.1:7070", "unix peer pid 1234", or what
  // set_peer_name gave (e.g. "rank 3 at 10.0.0.2:7070").
  const std::string& peer() const { return peer_; }
  void set_peer_name(std::string name) { peer_ = std::move(name); }
  std::uint32_t sender() const { return sender_; }
  void set_sender(std::uint32_t sender) { sender_ = sender; }
  // What Read accepts from now on, e.g. more once a stranger has introduced itself.
  void set_max_payload(std::uint32_t max_payload) { max_payload_ = max_payload; }
  // Closes the socket now; later calls fail with kClosed.
  void Close();

 private:
  struct Failure {
    FrameError error;
    Status status;
  };
  using Deadline = std::chrono::steady_clock::time_point;

  Status Fail(FrameError error, const std::string& detail);
  Status Break(std::optional<Failure>& direction, FrameError error, const std::string& detail);
  std::optional<Status> CheckUsable(const std::optional<Failure>& direction);
  // Receives exactly buf.size() bytes into buf; `already` counts frame bytes received before, for
  // the message. Fails the read direction (or, for a clean timeout, only this call). In the same
  // system calls it takes whatever of `extra` (the bytes after buf's) has come, never waiting for
  // it, and says how much in *extra_got.
  Status Receive(std::span<std::uint8_t> buf, std::size_t already, std::size_t frame_size,
                 Deadline deadline, std::chrono::milliseconds timeout,
                 std::span<std::uint8_t> extra = {}, std::size_t* extra_got = nullptr);
  // Reads and checks a header against `max_payload`; on another version replies before failing.
  // `early`, `early_got`: the payload's first bytes, as Receive's `extra`.
  Result<FrameHeader> ReadHeader(std::uint32_t max_payload, Deadline deadline,
                                 std::chrono::milliseconds timeout,
                                 std::span<std::uint8_t> early = {},
                                 std::size_t* early_got = nullptr);
  Status CheckPayload(const FrameHeader& h, std::span<const std::uint8_t> payload);

  UniqueFd fd_;
  std::uint32_t max_payload_;
  std::uint32_t sender_ = kNoSender;
  std::string peer_;
  static constexpr int kNoError = -1;
  std::atomic<int> last_error_{kNoError};  // a FrameError; written by both directions
  std::optional<Failure> read_failure_;
  std::optional<Failure> write_failure_;
};

}  // namespace dtrain::net
