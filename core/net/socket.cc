#include "core/net/socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

#include "core/duration_text.h"
#include "core/net/host_info.h"

namespace dtrain::net {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long a transfer that has begun a frame polls for the peer, yielding the core between looks,
// before it sleeps in poll(2): the rest of a frame under way usually follows within microseconds,
// while waking a sleeping thread costs tens of them on virtual hosts (bench/README.md: +9 % for
// a 4 MiB all-reduce between two processes).
constexpr auto kMidFrameYield = std::chrono::microseconds(200);

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

std::string SystemError(int error_number) {
  return std::error_code(error_number, std::system_category()).message();
}

Status FrameFailure(FrameError error, const std::string& detail) {
  StatusCode code = StatusCode::kError;
  if (error == FrameError::kTimeout) code = StatusCode::kTimeout;
  if (error == FrameError::kClosed) code = StatusCode::kClosed;
  return Status::Error(code, std::string(FrameErrorName(error)) + ": " + detail);
}

milliseconds Remaining(Clock::time_point deadline) {
  return std::max(std::chrono::ceil<milliseconds>(deadline - Clock::now()), milliseconds(0));
}

IoOutcome WaitReady(int fd, short events, Clock::time_point deadline, bool mid_frame) {
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

Result<UniqueFd> ConnectUnixSocket(const std::string& path, milliseconds timeout) {
  sockaddr_un addr;
  if (std::optional<std::string> bad = UnixAddress(path, addr)) {
    return FrameFailure(FrameError::kIo, "cannot connect: " + *bad);
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) {
    return FrameFailure(FrameError::kIo, "cannot create a unix socket: " + SystemError(errno));
  }
  // A Unix connect only waits when the server's backlog is full; SO_SNDTIMEO bounds that wait.
  const Clock::time_point deadline = Clock::now() + std::max(timeout, milliseconds(0));
  for (;;) {
    const timeval limit = ToTimeval(std::max(Remaining(deadline), milliseconds(1)));
    ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) break;
    const int e = errno;
    if (e == EINTR && Clock::now() < deadline) continue;
    if (e == EAGAIN || e == EINTR) {
      return FrameFailure(FrameError::kTimeout,
                          "unix socket " + path + " accepted no connection within " + Ms(timeout));
    }
    return FrameFailure(FrameError::kIo,
                        "cannot connect to unix socket " + path + ": " + SystemError(e));
  }
  const timeval none{};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none);
  return fd;
}

Result<UniqueFd> ConnectTcpSocket(const std::string& host, std::uint16_t port,
                                  milliseconds timeout) {
  const std::string target = JoinHostPort(host, port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) {
    const std::string why = rc == EAI_SYSTEM ? SystemError(errno) : ::gai_strerror(rc);
    return FrameFailure(FrameError::kIo, "cannot resolve " + host + ": " + why);
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);

  const Clock::time_point deadline = Clock::now() + std::max(timeout, milliseconds(0));
  std::vector<std::string> failures;
  for (const addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
    const std::string address = FormatAddress(ai->ai_addr);
    UniqueFd fd(
        ::socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd) {
      failures.push_back(address + ": " + SystemError(errno));
      continue;
    }
    int e = ::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 ? 0 : errno;
    if (e == EINPROGRESS || e == EINTR) {
      const IoOutcome wait = WaitReady(fd.get(), POLLOUT, deadline);
      if (wait.error == FrameError::kTimeout) {
        return FrameFailure(FrameError::kTimeout,
                            "no connection to " + target + " within " + Ms(timeout));
      }
      e = wait.error_number;
      socklen_t len = sizeof e;
      if (!wait.error) ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &e, &len);
    }
    const int one = 1;
    if (e == 0 && ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
      e = errno;
    }
    if (e == 0) return fd;
    failures.push_back(address + ": " + SystemError(e));
  }
  std::string detail = "cannot connect to ";
  if (failures.size() == 1) {
    detail += failures.front();
  } else {
    detail += target + ":";
    for (std::size_t i = 0; i < failures.size(); ++i) detail += (i ? "; " : " ") + failures[i];
  }
  return FrameFailure(FrameError::kIo, detail);
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
    UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!probe) return Status::Error("cannot create a unix socket: " + SystemError(errno));
    const int e = ::connect(probe.get(), sa, sizeof addr) == 0 ? 0 : errno;
    probe.reset();
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
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return Status::Error("cannot create a unix socket: " + SystemError(errno));
  const auto fail = [&](const char* step) {
    const int e = errno;
    fd.reset();
    return Status::Error("cannot listen on " + path + ": " + step + ": " + SystemError(e));
  };
  if (::bind(fd.get(), sa, sizeof addr) != 0) return fail("bind");
  // Permissions are set before listen(), so no connection is accepted under the umask's mode.
  const char* failed_step = ::chmod(path.c_str(), 0660) != 0   ? "chmod"
                            : ::listen(fd.get(), backlog) != 0 ? "listen"
                                                               : nullptr;
  if (failed_step != nullptr) {
    Status status = fail(failed_step);
    ::unlink(path.c_str());
    return status;
  }
  return fd.release();
}

}  // namespace dtrain::net
