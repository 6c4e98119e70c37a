// The smallest HTTP client the tests of dtraind's HTTP listener need: one request written raw
// over a fresh connection to 127.0.0.1, its whole response read back, and the parts of it the
// tests look at.
//
//   const std::string r = Get(port, "/metrics");   // "HTTP/1.1 200 OK\r\n..."
//   BOOST_TEST(StatusCode(r) == 200);
//   StatusLine(port, "GET /api/stream HTTP/1.1\r\n\r\n");   // "HTTP/1.1 200", of a stream too
//
// Blocking; the listener closes every connection after its response, and what has not come
// kPatience after the request is not waited for. One thread at a time.
#pragma once

#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace dtrain::testing {

inline constexpr std::chrono::seconds kPatience{30};

// A fresh connection to 127.0.0.1:port with `request` written on it; the caller closes it.
inline int SendRequest(std::uint16_t port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  BOOST_REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  BOOST_REQUIRE(::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size()));
  return fd;
}

// The status line ("HTTP/1.1 200") of the answer to `request`, read without waiting for the
// rest (an event stream's answer does not end), or what came of it within kPatience.
inline std::string StatusLine(std::uint16_t port, const std::string& request) {
  const int fd = SendRequest(port, request);
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  char line[12] = {};
  std::size_t have = 0;
  while (have < sizeof line) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd readable{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&readable, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = ::read(fd, line + have, sizeof line - have);
    if (n <= 0) break;
    have += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return std::string(line, have);
}

// The raw response to one request sent over a fresh TCP connection to 127.0.0.1:port.
inline std::string HttpExchange(std::uint16_t port, const std::string& request) {
  const int fd = SendRequest(port, request);
  // A response that does not end (an event stream) is cut off kPatience after the request.
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  std::string response;
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd readable{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&readable, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    response.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return response;
}

// GET `path` with `Host: localhost` and the `extra` header lines (each ending in "\r\n").
inline std::string Get(std::uint16_t port, const std::string& path, const std::string& extra = "") {
  return HttpExchange(port, "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n" + extra + "\r\n");
}

inline int StatusCode(const std::string& response) {
  return response.size() > 12 ? std::stoi(response.substr(9, 3)) : 0;
}

inline std::string Body(const std::string& response) {
  const std::size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

}  // namespace dtrain::testing
