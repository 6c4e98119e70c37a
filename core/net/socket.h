// Stream sockets apart from what travels on them: connecting to a Unix socket path or a TCP
// host and port within a timeout (resolving a host name first), listening on a Unix socket
// path, waiting until a socket is ready, and how messages name the other end. FrameStream
// (frame_stream.h) frames bytes over the sockets these open.
//
//   Result<UniqueFd> fd = ConnectTcpSocket("10.0.0.2", 7070, 5s);  // "timeout: no connection ..."
//   std::string who = DescribePeer(fd.value().get());               // "10.0.0.2:7070"
//
// A connect error names its FrameError (frame.h) first, as FrameStream's errors do: "timeout: ",
// "io: ". Blocking; safe for concurrent use on different sockets.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/net/frame.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace dtrain::net {

// The system's text for an errno value.
std::string SystemError(int error_number);

// A failed connect or frame transfer: "<FrameErrorName>: <detail>", code kTimeout for kTimeout,
// kClosed for kClosed, kError for the rest (LastError tells those apart).
Status FrameFailure(FrameError error, const std::string& detail);

// One blocking step (a transfer or a wait) that stopped early, and why.
struct IoOutcome {
  std::optional<FrameError> error;
  std::size_t done = 0;  // bytes moved before it stopped
  int error_number = 0;  // for kIo
};

// What is left of the time until `deadline`, in whole milliseconds rounded up; 0 once past it.
std::chrono::milliseconds Remaining(std::chrono::steady_clock::time_point deadline);

// Waits until `fd` is ready for `events` (poll(2)), or the deadline. `mid_frame`: a frame is
// under way in this direction, so it polls (yielding the core) for a moment before sleeping.
// An error or hang-up counts as ready: the next transfer reports it precisely.
IoOutcome WaitReady(int fd, short events, std::chrono::steady_clock::time_point deadline,
                    bool mid_frame = false);

// A connected Unix stream socket, close-on-exec (a full backlog is the only wait).
Result<UniqueFd> ConnectUnixSocket(const std::string& path, std::chrono::milliseconds timeout);
// A connected TCP socket, non-blocking, close-on-exec, TCP_NODELAY. `host` is an address literal
// or a name; a name is resolved by the system resolver first, whose own timeouts (resolv.conf)
// bound that step, not `timeout`. Every address the name has is tried in turn.
Result<UniqueFd> ConnectTcpSocket(const std::string& host, std::uint16_t port,
                                  std::chrono::milliseconds timeout);

// How messages name a connected socket's other end: "unix:/path", "unix peer pid 1234",
// "127.0.0.1:7070", "[::1]:7070", else "fd N".
std::string DescribePeer(int fd);

// A listening Unix stream socket at `path`, mode 0660, close-on-exec; the caller owns the fd. A
// socket file left behind by a dead server is replaced; a live server's socket, or a file that is
// not a socket, is refused.
Result<int> ListenUnix(const std::string& path, int backlog);

}  // namespace dtrain::net
