// The smallest HTTP client the tests of dtraind's HTTP listener need: one request written raw
// over a fresh connection to 127.0.0.1, its whole response read back, and the parts of it the
// tests look at.
//
//   const std::string r = Get(port, "/metrics");   // "HTTP/1.1 200 OK\r\n..."
//   BOOST_TEST(StatusCode(r) == 200);
//
// Blocking; the listener closes every connection after its response, and a read waits 30 s at
// most for the next bytes. One thread at a time.
#pragma once

#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace dtrain::testing {

// The raw response to one request sent over a fresh TCP connection to 127.0.0.1:port.
inline std::string HttpExchange(std::uint16_t port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const timeval patience{30, 0};  // a response that never ends (a stream) ends the read here
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
  BOOST_REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  BOOST_REQUIRE(::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size()));
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) response.append(buffer, static_cast<std::size_t>(n));
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
