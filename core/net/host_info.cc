#include "core/net/host_info.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <memory>

#include "core/unique_fd.h"

namespace dtrain::net {

std::string LocalHostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

int OnlineCores() {
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

std::uint64_t PhysicalMemory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)
                               : 0;
}

std::optional<HostPort> SplitHostPort(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  const std::string_view port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return std::nullopt;  // an IPv6 address needs its brackets
  }
  unsigned number = 0;
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), number);
  if (host.empty() || port.empty() || error != std::errc() || end != port.data() + port.size() ||
      number < 1 || number > 65535) {
    return std::nullopt;
  }
  return HostPort{std::string(host), static_cast<std::uint16_t>(number)};
}

std::string JoinHostPort(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

namespace {

std::optional<sockaddr_in> FirstIPv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
    return std::nullopt;
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  sockaddr_in address{};
  std::memcpy(&address, list->ai_addr, sizeof address);
  return address;
}

std::string Text(const in_addr& address) {
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &address, text, sizeof text);
  return text;
}

}  // namespace

std::optional<std::string> ResolveIPv4(const std::string& host) {
  const std::optional<sockaddr_in> address = FirstIPv4(host);
  if (!address) return std::nullopt;
  return Text(address->sin_addr);
}

std::optional<std::string> RouteSourceIPv4(const std::string& host) {
  std::optional<sockaddr_in> to = FirstIPv4(host);
  if (!to) return std::nullopt;
  to->sin_port = htons(9);  // any port: a UDP connect only asks the routing table
  const UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) return std::nullopt;
  sockaddr_in mine{};
  socklen_t length = sizeof mine;
  const bool routed =
      ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&*to), sizeof *to) == 0 &&
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&mine), &length) == 0;
  if (!routed) return std::nullopt;
  return Text(mine.sin_addr);
}

}  // namespace dtrain::net
