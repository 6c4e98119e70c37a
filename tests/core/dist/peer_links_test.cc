// The introductions that open data-plane connections: a listener that requires the job's token
// closes a stranger's connection before reading anything of it but the introduction, and goes on
// waiting for the peer it expects; connections that stay silent hold up nobody's introduction.
#include "core/dist/peer_links.h"

#include <sys/socket.h>

#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/dist/loopback_ring.h"
#include "core/net/frame_stream.h"

namespace dtrain::dist {
namespace peer_links_test {

using namespace std::chrono_literals;

const std::string kToken(64, 'a');

// A stranger's connection, introduced with `payload`; true once the listener has closed it.
bool ClosedAfterIntroducing(std::uint16_t port, net::MessageType type, const std::string& payload) {
  auto s = net::FrameStream::ConnectTcp("127.0.0.1", port, 5s);
  BOOST_REQUIRE(s.ok());
  s.value().set_sender(0);
  if (!s.value().WriteString(type, 0, 0, payload, 5s).ok()) return true;
  // Anything that is not the right introduction gets no answer but the close.
  return !s.value().Read(10s).ok();
}

// Process 0 connects to `listener` over TCP from a thread, without a token; the end that
// process `self_id` accepts.
Result<std::unique_ptr<TcpLink>> ConnectedWithoutToken(const PeerListener& listener, int self_id) {
  std::thread peer([&] {
    BOOST_TEST(ConnectLink({"127.0.0.1", listener.port()}, 0, self_id, "", Clock::now() + 5s, "",
                           LinkTransport::kTcp)
                   .ok());
  });
  auto accepted = AcceptPeer(listener, self_id, 0, "", Clock::now() + 10s);
  peer.join();
  return accepted;
}

BOOST_AUTO_TEST_SUITE(peer_links)

BOOST_AUTO_TEST_CASE(strangers_without_the_token_are_closed_and_the_peer_still_gets_in) {
  auto listener = PeerListener::Open("127.0.0.1");
  BOOST_REQUIRE(listener.ok());
  listener.value().RequireToken(kToken);
  const std::uint16_t port = listener.value().port();

  std::thread strangers([&] {
    BOOST_TEST(ClosedAfterIntroducing(port, net::MessageType::kHeartbeat, ""));
    BOOST_TEST(ClosedAfterIntroducing(port, net::MessageType::kHeartbeat, std::string(64, 'b')));
    // A float frame claiming to be data: refused before its payload is read.
    BOOST_TEST(ClosedAfterIntroducing(port, net::MessageType::kFloats, std::string(4096, 'x')));
    // The right peer, after all of them.
    auto link = ConnectLink({"127.0.0.1", port}, 0, 1, "", Clock::now() + 10s, kToken,
                            LinkTransport::kTcp);
    BOOST_TEST(link.ok());
    if (link.ok()) {
      const float one = 1.0f;
      BOOST_TEST(link.value()->Send(7, std::span<const float>(&one, 1), Clock::now() + 5s).ok());
    }
  });
  auto accepted = AcceptPeer(listener.value(), 1, 0, "", Clock::now() + 30s);
  BOOST_REQUIRE_MESSAGE(accepted.ok(), accepted.status().message());
  float got = 0.0f;
  BOOST_TEST(accepted.value()->Recv(7, std::span<float>(&got, 1), Clock::now() + 5s).ok());
  BOOST_TEST(got == 1.0f);
  strangers.join();
  BOOST_TEST(listener.value().refused() == 3u);
}

// The right peer connects after `silent` connections that never finish an introduction (one of
// them stops half way through its header); Accept must get it by a deadline shorter than the
// silent ones' kIntroductionTimeout, summed, would allow if they were awaited one after another.
void RightPeerGetsInPastSilentConnections(int silent) {
  auto listener = PeerListener::Open("127.0.0.1");
  BOOST_REQUIRE(listener.ok());
  listener.value().RequireToken(kToken);
  const std::uint16_t port = listener.value().port();
  std::vector<net::FrameStream> held;  // open until the test ends
  std::thread others([&] {
    for (int i = 0; i < silent; ++i) {
      auto s = net::FrameStream::ConnectTcp("127.0.0.1", port, 5s);
      BOOST_REQUIRE(s.ok());
      if (i == 0) BOOST_REQUIRE(::send(s.value().fd(), "DTRN\x01\x00", 6, 0) == 6);
      held.push_back(std::move(s).value());
    }
    auto link = ConnectLink({"127.0.0.1", port}, 0, 1, "", Clock::now() + 30s, kToken,
                            LinkTransport::kTcp);
    BOOST_TEST(link.ok());
  });
  const auto deadline = Clock::now() + kIntroductionTimeout * silent / 2;
  auto accepted = AcceptPeer(listener.value(), 1, 0, "", deadline);
  others.join();
  BOOST_TEST(accepted.ok(), accepted.status().message());
  // At most kMaxPendingIntroductions wait at once: the oldest beyond it were closed.
  const auto evicted = static_cast<std::uint64_t>(
      std::max<int>(0, silent - static_cast<int>(kMaxPendingIntroductions)));
  BOOST_TEST(listener.value().refused() >= evicted);
}

BOOST_AUTO_TEST_CASE(silent_connections_hold_up_no_introduction) {
  RightPeerGetsInPastSilentConnections(12);   // awaited in turn: 60 s; the deadline is 30 s
  RightPeerGetsInPastSilentConnections(100);  // more than may wait at once
}

BOOST_AUTO_TEST_CASE(without_a_token_required_an_introduction_is_enough) {
  auto listener = PeerListener::Open("127.0.0.1");
  BOOST_REQUIRE(listener.ok());
  BOOST_TEST(ConnectedWithoutToken(listener.value(), 1).ok());
}

BOOST_AUTO_TEST_CASE(ring_links_use_reno_and_shard_links_keep_the_hosts_congestion_control) {
  std::string host_default;
  std::ifstream("/proc/sys/net/ipv4/tcp_congestion_control") >> host_default;
  BOOST_TEST_MESSAGE("the host's default: " << host_default);

  Result<std::vector<RingLinks>> ring = LoopbackRing::ConnectAll(3, 10s);
  BOOST_TEST_REQUIRE(ring.ok(), ring.status().message());
  for (const RingLinks& rank : ring.value()) {
    for (Link* link : {rank.left, rank.right}) {
      const auto* tcp = dynamic_cast<const TcpLink*>(link);
      BOOST_TEST_REQUIRE(tcp != nullptr);
      BOOST_TEST(tcp->CongestionControl() == kRingCongestionControl);
    }
  }

  auto listener = PeerListener::Open("127.0.0.1");
  BOOST_TEST_REQUIRE(listener.ok());
  auto shard = ConnectedWithoutToken(listener.value(), 3);  // worker 0 to shard 3
  BOOST_TEST_REQUIRE(shard.ok(), shard.status().message());
  BOOST_TEST(shard.value()->CongestionControl() == host_default);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace peer_links_test
}  // namespace dtrain::dist
