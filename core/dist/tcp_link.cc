#include "core/dist/tcp_link.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstring>
#include <fstream>
#include <utility>

namespace dtrain::dist {
namespace {

// Sets SO_RCVBUF to TcpLink::kReceiveBufferBytes where net.core.rmem_max allows that much. Where
// it does not, the kernel would cap the request below what autotuning may reach, so autotuning
// stays. Best effort: the buffer's size changes only the speed.
void WidenReceiveBuffer(int fd) {
  std::ifstream rmem_max("/proc/sys/net/core/rmem_max");
  long allowed = 0;
  if (!(rmem_max >> allowed) || allowed < TcpLink::kReceiveBufferBytes) return;
  const int bytes = TcpLink::kReceiveBufferBytes;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

}  // namespace

Result<std::unique_ptr<TcpLink>> TcpLink::Create(net::FrameStream stream, int self_rank,
                                                 int peer_rank, std::string peer_label) {
  const int fd = stream.fd();
  if (peer_label.empty()) peer_label = "rank " + std::to_string(peer_rank);
  const std::string peer = peer_label + " (" + stream.peer() + ")";
  const int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
    return Status::Error("cannot set TCP_NODELAY on the link to " + peer + ": " +
                         std::strerror(errno));
  }
  WidenReceiveBuffer(fd);
  const int write_fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (write_fd < 0) {
    return Status::Error("cannot duplicate the socket of the link to " + peer + ": " +
                         std::strerror(errno));
  }
  net::FrameStream writer(write_fd);
  for (net::FrameStream* s : {&stream, &writer}) {
    s->set_peer_name(peer);
    s->set_sender(static_cast<std::uint32_t>(self_rank));
  }
  return std::unique_ptr<TcpLink>(
      new TcpLink(std::move(stream), std::move(writer), peer_rank, peer));
}

TcpLink::TcpLink(net::FrameStream reader, net::FrameStream writer, int peer_rank, std::string peer)
    : reader_(std::move(reader)),
      writer_(std::move(writer)),
      socket_(reader_.fd()),
      peer_rank_(peer_rank),
      peer_(std::move(peer)) {}

Status TcpLink::Send(std::uint32_t tag, std::span<const float> data, Deadline deadline) {
  const std::span<const std::uint8_t> payload = net::FloatBytes(data);
  const net::MessageType type =
      checksums_ ? net::MessageType::kFloats : net::MessageType::kUncheckedFloats;
  return writer_.Write(type, 0, writer_.sender(), tag, {&payload, 1}, Remaining(deadline));
}

Result<std::uint32_t> TcpLink::RecvAnyTag(std::span<float> out, Deadline deadline) {
  Result<net::FrameHeader> h = reader_.ReadFloatsInto(out, Remaining(deadline));
  if (!h.ok()) return h.status();
  if (h.value().sender != static_cast<std::uint32_t>(peer_rank_)) {
    return Status::Error("unexpected frame: " + peer_ + " sent a frame as rank " +
                         std::to_string(h.value().sender));
  }
  return h.value().tag;
}

std::string TcpLink::CongestionControl() const {
  char name[32] = {};
  socklen_t size = sizeof name - 1;
  if (::getsockopt(socket_, IPPROTO_TCP, TCP_CONGESTION, name, &size) != 0) return "";
  return name;
}

bool TcpLink::Readable() {
  pollfd p{.fd = socket_, .events = POLLIN, .revents = 0};
  return ::poll(&p, 1, 0) > 0;
}

void TcpLink::Close() { ::shutdown(socket_, SHUT_RDWR); }

}  // namespace dtrain::dist
