// TcpLink: a Link over one connected TCP socket, in the data-plane framing (core/net/protocol.md):
// every message is one kFloats frame whose tag field carries the message's tag and whose sender
// field carries the writer's rank. Floats go straight from the caller's span into sendmsg and
// straight from the socket into the caller's span (net::FrameStream); TCP_NODELAY is on.
// The socket's receive buffer is set to kReceiveBufferBytes where net.core.rmem_max allows it.
//
//   Result<net::FrameStream> s = net::FrameStream::ConnectTcp("10.0.0.2", port, 5s);
//   Result<std::unique_ptr<TcpLink>> link = TcpLink::Create(std::move(s).value(), 0, 1);
//   link.value()->peer();  // "rank 1 (10.0.0.2:40123)"
//
// Full duplex: each direction has its own FrameStream over its own descriptor of the same socket,
// so the sending thread owns the write side and the receiving thread the read side, and neither
// waits for the other. A frame from another rank than the peer's is refused. Thread safety: the
// Link contract (one sender and one receiver at a time; Close from any thread).
#pragma once

#include <memory>
#include <string>

#include "core/dist/link.h"
#include "core/net/frame_stream.h"

namespace dtrain::dist {

class TcpLink final : public Link {
 public:
  // SO_RCVBUF asked for (the kernel doubles it): room for what a driven ring op sends ahead
  // (ring_allreduce.h, 512 KiB to 1 MiB) and more, so that neither end's sends wait on the
  // other's window. Autotuning, which setting it turns off, keeps loopback windows far smaller:
  // two ranks' 4 MiB all-reduce over loopback went from 2.0 to 3.2 GB/s (bench/README.md).
  static constexpr int kReceiveBufferBytes = 2 << 20;

  // `stream` is connected to rank `peer_rank`; this end is rank `self_rank`. Errors name the peer
  // "<peer_label> (address)", by default "rank <peer_rank>".
  static Result<std::unique_ptr<TcpLink>> Create(net::FrameStream stream, int self_rank,
                                                 int peer_rank, std::string peer_label = "");

  Status Send(std::uint32_t tag, std::span<const float> data, Deadline deadline) override;
  Result<std::uint32_t> RecvAnyTag(std::span<float> out, Deadline deadline) override;
  // Off: messages go as kUncheckedFloats frames (core/net/protocol.md).
  void SetSendChecksums(bool on) override { checksums_ = on; }
  std::string_view Transport() const override {
    return checksums_ ? "tcp" : "tcp without checksums";
  }
  bool Readable() override;
  // The socket's TCP congestion control ("reno", "cubic", ...; empty if it cannot be read).
  std::string CongestionControl() const;
  // Shuts the socket down both ways (the descriptors close with the link).
  void Close() override;
  const std::string& peer() const override { return peer_; }

 private:
  TcpLink(net::FrameStream reader, net::FrameStream writer, int peer_rank, std::string peer);

  net::FrameStream reader_;  // used only by the receiving thread
  net::FrameStream writer_;  // used only by the sending thread; a dup of reader_'s descriptor
  const int socket_;         // reader_'s descriptor, for Close and Readable from any thread
  const int peer_rank_;
  const std::string peer_;
  bool checksums_ = true;  // used only by the sending thread
};

}  // namespace dtrain::dist
