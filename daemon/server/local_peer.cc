#include "daemon/server/local_peer.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstring>

#include "core/unique_fd.h"

namespace dtrain::server {
namespace {

// An IPv4-mapped IPv6 address as the IPv4 one; other addresses as they are.
sockaddr_storage Unmapped(const sockaddr_storage& in) {
  if (in.ss_family != AF_INET6) return in;
  const auto& six = reinterpret_cast<const sockaddr_in6&>(in);
  if (!IN6_IS_ADDR_V4MAPPED(&six.sin6_addr)) return in;
  sockaddr_storage out{};
  auto& four = reinterpret_cast<sockaddr_in&>(out);
  four.sin_family = AF_INET;
  four.sin_port = six.sin6_port;
  std::memcpy(&four.sin_addr, &six.sin6_addr.s6_addr[12], 4);
  return out;
}

bool IsLoopback(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in&>(a).sin_addr.s_addr) >> 24) == 127;
  }
  return a.ss_family == AF_INET6 &&
         IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6&>(a).sin6_addr);
}

// Port (network order) and address words of `a` into the diag socket id's fields.
void Fill(const sockaddr_storage& a, __be16* port, __be32 words[4]) {
  if (a.ss_family == AF_INET) {
    const auto& four = reinterpret_cast<const sockaddr_in&>(a);
    *port = four.sin_port;
    std::memcpy(words, &four.sin_addr, 4);
  } else {
    const auto& six = reinterpret_cast<const sockaddr_in6&>(a);
    *port = six.sin6_port;
    std::memcpy(words, &six.sin6_addr, 16);
  }
}

bool Addresses(int fd, sockaddr_storage* peer, sockaddr_storage* local) {
  socklen_t peer_len = sizeof *peer, local_len = sizeof *local;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(peer), &peer_len) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(local), &local_len) != 0) {
    return false;
  }
  *peer = Unmapped(*peer);
  *local = Unmapped(*local);
  return peer->ss_family == local->ss_family;
}

// The owner of the socket whose own address is `from` and whose peer is `to`.
std::optional<uid_t> SocketOwner(const sockaddr_storage& from, const sockaddr_storage& to) {
  const UniqueFd nl(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!nl) return std::nullopt;
  const timeval patience{1, 0};  // the kernel answers at once; never hang an accept loop
  ::setsockopt(nl.get(), SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } message{};
  message.header.nlmsg_len = sizeof message;
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST;
  message.request.sdiag_family = static_cast<__u8>(from.ss_family);
  message.request.sdiag_protocol = IPPROTO_TCP;
  message.request.idiag_states = ~0u;
  Fill(from, &message.request.id.idiag_sport, message.request.id.idiag_src);
  Fill(to, &message.request.id.idiag_dport, message.request.id.idiag_dst);
  message.request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  message.request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  std::optional<uid_t> owner;
  alignas(nlmsghdr) char reply[8192];
  if (::send(nl.get(), &message, sizeof message, 0) == static_cast<ssize_t>(sizeof message)) {
    const ssize_t n = ::recv(nl.get(), reply, sizeof reply, 0);
    const auto* h = reinterpret_cast<const nlmsghdr*>(reply);
    if (n > 0 && NLMSG_OK(h, static_cast<unsigned>(n)) && h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
        h->nlmsg_len >= NLMSG_LENGTH(sizeof(inet_diag_msg))) {
      owner = static_cast<const inet_diag_msg*>(NLMSG_DATA(h))->idiag_uid;
    }
  }
  return owner;
}

std::string AddressText(const sockaddr_storage& a) {
  char text[INET6_ADDRSTRLEN] = {};
  const void* raw = a.ss_family == AF_INET
                        ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in&>(a).sin_addr)
                        : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6&>(a).sin6_addr);
  if (::inet_ntop(a.ss_family, raw, text, sizeof text) == nullptr) return "unknown";
  return text;
}

}  // namespace

std::optional<uid_t> LoopbackPeerUid(int fd) {
  sockaddr_storage peer{}, local{};
  if (!Addresses(fd, &peer, &local) || !IsLoopback(peer)) return std::nullopt;
  return SocketOwner(peer, local);
}

std::string TcpClient(int fd, std::optional<uid_t>* uid) {
  const std::optional<uid_t> owner = LoopbackPeerUid(fd);
  if (uid != nullptr) *uid = owner;
  if (owner) return "uid " + std::to_string(*owner);
  sockaddr_storage peer{}, local{};
  if (!Addresses(fd, &peer, &local)) return "address unknown";
  return "address " + AddressText(peer);
}

}  // namespace dtrain::server
