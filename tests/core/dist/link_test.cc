// The Link contract, checked on both transports (in-process and TCP on 127.0.0.1): bit-exact
// messages with their tags, errors that name the peer and both sides' tags or sizes, deadlines
// against a silent peer, what a close does to either end, and full duplex on one link.
#include "core/dist/link.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bit>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <thread>

#include "core/dist/tcp_link.h"
#include "core/net/frame_stream.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace link_test {

using namespace std::chrono_literals;
using testing::Mentions;
using testing::Transport;

// The two ends of one link: a is rank 0's, b is rank 1's.
struct Ends {
  std::vector<RingLinks> ring;
  Link& a() { return *ring[0].left; }
  Link& b() { return *ring[1].left; }
};

Ends Connect(Transport transport) { return {testing::MakeRing(transport, 2)}; }

template <typename Body>
void OnBothTransports(Body body) {
  for (Transport t : testing::kTransports) {
    BOOST_TEST_CONTEXT("transport " << t) { body(t); }
  }
}

Deadline In(Clock::duration d) { return Clock::now() + d; }

// "rank R (127.0.0.1:PORT)" with a decimal port.
bool IsTcpPeer(const std::string& peer, const std::string& rank) {
  const std::string head = rank + " (127.0.0.1:";
  if (!peer.starts_with(head) || !peer.ends_with(")")) return false;
  const std::string port = peer.substr(head.size(), peer.size() - head.size() - 1);
  return !port.empty() && port.find_first_not_of("0123456789") == std::string::npos;
}

// Two connected FrameStreams over TCP on 127.0.0.1: the connecting one and the accepted one.
std::pair<net::FrameStream, net::FrameStream> TcpStreams() {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  BOOST_TEST_REQUIRE(listener >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  BOOST_TEST_REQUIRE(::bind(listener, sa, len) == 0);
  BOOST_TEST_REQUIRE(::listen(listener, 1) == 0);
  BOOST_TEST_REQUIRE(::getsockname(listener, sa, &len) == 0);
  Result<net::FrameStream> connected =
      net::FrameStream::ConnectTcp("127.0.0.1", ntohs(addr.sin_port), 5s);
  BOOST_TEST_REQUIRE(connected.ok(), connected.status().message());
  const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ::close(listener);
  BOOST_TEST_REQUIRE(fd >= 0);
  return {std::move(connected).value(), net::FrameStream(fd)};
}

BOOST_AUTO_TEST_SUITE(dist_link)

BOOST_AUTO_TEST_CASE(messages_arrive_bit_exact_in_order_with_their_tags) {
  OnBothTransports([](Transport transport) {
    Ends e = Connect(transport);
    const std::vector<float> first = {1.0f, -0.0f, std::bit_cast<float>(0x7FC01234u),
                                      std::bit_cast<float>(0x00000001u), INFINITY};
    const std::vector<float> second = testing::Input(3, 1000);
    BOOST_TEST_REQUIRE(e.a().Send(7, first, In(5s)).ok());
    BOOST_TEST_REQUIRE(e.a().Send(8, second, In(5s)).ok());
    BOOST_TEST_REQUIRE(e.a().Send(9, {}, In(5s)).ok());
    std::vector<float> out(first.size()), out2(second.size());
    Result<std::uint32_t> tag = e.b().RecvAnyTag(out, In(5s));
    BOOST_TEST_REQUIRE(tag.ok(), tag.status().message());
    BOOST_TEST(tag.value() == 7u);
    BOOST_TEST(testing::SameBits(out, first));
    const Status s = e.b().Recv(8, out2, In(5s));
    BOOST_TEST_REQUIRE(s.ok(), s.message());
    BOOST_TEST(testing::SameBits(out2, second));
    const Status empty = e.b().Recv(9, {}, In(5s));
    BOOST_TEST(empty.ok(), empty.message());
  });
}

BOOST_AUTO_TEST_CASE(peers_are_named_by_rank_and_address) {
  OnBothTransports([](Transport transport) {
    Ends e = Connect(transport);
    if (transport == Transport::kLocal) {
      BOOST_TEST(e.a().peer() == "rank 1 (in-process)");
      BOOST_TEST(e.b().peer() == "rank 0 (in-process)");
    } else {
      BOOST_TEST(IsTcpPeer(e.a().peer(), "rank 1"), e.a().peer());
      BOOST_TEST(IsTcpPeer(e.b().peer(), "rank 0"), e.b().peer());
    }
  });
}

BOOST_AUTO_TEST_CASE(another_tag_is_an_error_naming_both_tags_and_the_peer) {
  OnBothTransports([](Transport transport) {
    Ends e = Connect(transport);
    const std::vector<float> values(4, 1.0f);
    BOOST_TEST_REQUIRE(e.a().Send(12, values, In(5s)).ok());
    std::vector<float> out(4);
    const Status s = e.b().Recv(11, out, In(5s));
    BOOST_TEST_REQUIRE(!s.ok());
    BOOST_TEST(Mentions(s.message(), "tagged 12"));
    BOOST_TEST(Mentions(s.message(), "tagged 11"));
    BOOST_TEST(Mentions(s.message(), e.b().peer()));
  });
}

BOOST_AUTO_TEST_CASE(another_size_is_an_error_naming_both_sizes_and_the_peer) {
  OnBothTransports([](Transport transport) {
    Ends e = Connect(transport);
    const std::vector<float> ten(10, 1.5f);
    BOOST_TEST_REQUIRE(e.a().Send(1, ten, In(5s)).ok());
    std::vector<float> nine(9);
    const Status s = e.b().Recv(1, nine, In(5s));
    BOOST_TEST_REQUIRE(!s.ok());
    BOOST_TEST(Mentions(s.message(), "unexpected"));
    BOOST_TEST(Mentions(s.message(), transport == Transport::kLocal ? "9 floats" : "(9 floats)"));
    BOOST_TEST(Mentions(s.message(), transport == Transport::kLocal ? "10 floats" : "40 bytes"));
    BOOST_TEST(Mentions(s.message(), e.b().peer()));
  });
}

BOOST_AUTO_TEST_CASE(a_silent_peer_is_a_timeout_naming_it) {
  OnBothTransports([](Transport transport) {
    Ends e = Connect(transport);
    std::vector<float> out(3);
    const Clock::time_point start = Clock::now();
    const Status s = e.b().Recv(1, out, In(200ms));
    BOOST_TEST(testing::SecondsSince(start) < 30.0);  // no hang
    BOOST_TEST_REQUIRE(!s.ok());
    BOOST_TEST(Mentions(s.message(), "timeout"));
    BOOST_TEST(Mentions(s.message(), "rank 0"));
  });
}

BOOST_AUTO_TEST_CASE(a_send_that_the_peer_never_drains_times_out_naming_it) {
  OnBothTransports([](Transport transport) {
    Ends e = Connect(transport);
    const std::vector<float> big(8 << 20, 1.0f);  // 32 MiB: more than any socket buffer
    const Clock::time_point start = Clock::now();
    // The in-process link takes one message of any size into an empty queue; the second waits.
    Status s = e.a().Send(1, big, In(300ms));
    if (s.ok() && transport == Transport::kLocal) s = e.a().Send(2, big, In(300ms));
    BOOST_TEST(testing::SecondsSince(start) < 30.0);
    BOOST_TEST_REQUIRE(!s.ok());
    BOOST_TEST(Mentions(s.message(), "timeout"));
    BOOST_TEST(Mentions(s.message(), "rank 1"));
  });
}

BOOST_AUTO_TEST_CASE(after_a_close_the_peer_gets_what_was_sent_then_an_error) {
  OnBothTransports([](Transport transport) {
    Ends e = Connect(transport);
    const std::vector<float> values = {1.0f, 2.0f};
    BOOST_TEST_REQUIRE(e.a().Send(5, values, In(5s)).ok());
    e.a().Close();
    std::vector<float> out(2);
    const Status first = e.b().Recv(5, out, In(5s));
    BOOST_TEST(first.ok(), first.message());
    BOOST_TEST(testing::SameBits(out, values));
    const Status next = e.b().Recv(6, out, In(5s));
    BOOST_TEST_REQUIRE(!next.ok());
    BOOST_TEST(Mentions(next.message(), "closed"));
    BOOST_TEST(Mentions(next.message(), "rank 0"));
    // The closing end's own calls fail too.
    BOOST_TEST(!e.a().Send(7, values, In(5s)).ok());
    BOOST_TEST(!e.a().Recv(7, out, In(5s)).ok());
  });
}

BOOST_AUTO_TEST_CASE(close_from_another_thread_ends_a_blocked_receive) {
  OnBothTransports([](Transport transport) {
    Ends e = Connect(transport);
    std::vector<float> out(3);
    Status s;
    const Clock::time_point start = Clock::now();
    std::thread receiver([&] { s = e.b().Recv(1, out, In(60s)); });
    std::this_thread::sleep_for(50ms);
    e.b().Close();
    receiver.join();
    BOOST_TEST(testing::SecondsSince(start) < 30.0);  // the close, not the deadline, ended it
    BOOST_TEST(!s.ok());
  });
}

BOOST_AUTO_TEST_CASE(readable_says_whether_a_message_is_waiting) {
  OnBothTransports([](Transport transport) {
    Ends e = Connect(transport);
    BOOST_TEST(!e.b().Readable());
    const std::vector<float> one = {1.0f};
    BOOST_TEST_REQUIRE(e.a().Send(1, one, In(5s)).ok());
    const Clock::time_point start = Clock::now();
    while (!e.b().Readable() && Clock::now() - start < 30s) std::this_thread::yield();
    BOOST_TEST(e.b().Readable());
    std::vector<float> out(1);
    BOOST_TEST_REQUIRE(e.b().Recv(1, out, In(5s)).ok());
    BOOST_TEST(!e.b().Readable());
  });
}

BOOST_AUTO_TEST_CASE(both_ends_send_large_messages_at_once_on_one_link) {
  OnBothTransports([](Transport transport) {
    // Each direction carries far more than a socket buffer holds: only works if one thread can
    // send while another receives on the same link.
    Ends e = Connect(transport);
    const std::vector<float> from_a = testing::Input(0, 2 << 20),
                             from_b = testing::Input(1, 2 << 20);
    std::vector<float> at_a(from_b.size()), at_b(from_a.size());
    Status sent_a, sent_b, got_a, got_b;
    {
      std::jthread send_a([&] { sent_a = e.a().Send(3, from_a, In(20s)); });
      std::jthread send_b([&] { sent_b = e.b().Send(3, from_b, In(20s)); });
      std::jthread recv_a([&] { got_a = e.a().Recv(3, at_a, In(20s)); });
      got_b = e.b().Recv(3, at_b, In(20s));
    }
    BOOST_TEST(sent_a.ok(), sent_a.message());
    BOOST_TEST(sent_b.ok(), sent_b.message());
    BOOST_TEST(got_a.ok(), got_a.message());
    BOOST_TEST(got_b.ok(), got_b.message());
    BOOST_TEST(testing::SameBits(at_a, from_b));
    BOOST_TEST(testing::SameBits(at_b, from_a));
  });
}

BOOST_AUTO_TEST_CASE(local_send_blocks_once_the_capacity_is_queued) {
  LocalLinkPair p = MakeLocalLinkPair("a", "b", /*capacity_bytes=*/64);
  const std::vector<float> eight(8, 1.0f);  // 32 bytes
  BOOST_TEST_REQUIRE(p.a->Send(1, eight, In(1s)).ok());
  BOOST_TEST_REQUIRE(p.a->Send(2, eight, In(1s)).ok());
  const Status full = p.a->Send(3, eight, In(100ms));
  BOOST_TEST_REQUIRE(!full.ok());
  BOOST_TEST(Mentions(full.message(), "timeout"));
  BOOST_TEST(Mentions(full.message(), "b"));
  std::vector<float> out(8);
  BOOST_TEST_REQUIRE(p.b->Recv(1, out, In(1s)).ok());
  BOOST_TEST(p.a->Send(3, eight, In(1s)).ok());
  // A message larger than the capacity goes through once the queue is empty.
  const std::vector<float> big(100, 2.0f);
  std::vector<float> big_out(100);
  Status big_sent;
  std::thread sender([&] { big_sent = p.a->Send(4, big, In(5s)); });
  BOOST_TEST_REQUIRE(p.b->Recv(2, out, In(5s)).ok());
  BOOST_TEST_REQUIRE(p.b->Recv(3, out, In(5s)).ok());
  BOOST_TEST_REQUIRE(p.b->Recv(4, big_out, In(5s)).ok());
  sender.join();
  BOOST_TEST(big_sent.ok(), big_sent.message());
  BOOST_TEST(testing::SameBits(big_out, big));
}

BOOST_AUTO_TEST_CASE(either_local_end_may_be_destroyed_first) {
  LocalLinkPair p = MakeLocalLinkPair("a", "b");
  const std::vector<float> one = {1.0f};
  BOOST_TEST_REQUIRE(p.a->Send(1, one, In(1s)).ok());
  p.a.reset();
  std::vector<float> out(1);
  BOOST_TEST(p.b->Recv(1, out, In(1s)).ok());
  const Status s = p.b->Send(2, one, In(1s));
  BOOST_TEST_REQUIRE(!s.ok());
  BOOST_TEST(Mentions(s.message(), "a closed the link"));
}

BOOST_AUTO_TEST_CASE(tcp_links_refuse_frames_from_another_rank) {
  // A mis-wired ring: the stream that should carry rank 1's frames carries rank 5's.
  auto [raw, accepted] = TcpStreams();
  Result<std::unique_ptr<TcpLink>> link = TcpLink::Create(std::move(accepted), 0, 1);
  BOOST_TEST_REQUIRE(link.ok(), link.status().message());
  const std::vector<float> one = {1.0f};
  const std::span<const std::uint8_t> payload = net::FloatBytes(one);
  BOOST_TEST_REQUIRE(raw.Write(net::MessageType::kFloats, 0, 5, 4, {&payload, 1}, 5s).ok());
  std::vector<float> out(1);
  const Status s = link.value()->Recv(4, out, In(5s));
  BOOST_TEST_REQUIRE(!s.ok());
  BOOST_TEST(Mentions(s.message(), "rank 1 (127.0.0.1:"));
  BOOST_TEST(Mentions(s.message(), "as rank 5"));
}

BOOST_AUTO_TEST_CASE(tcp_frames_carry_the_tag_and_the_senders_rank) {
  auto [raw, accepted] = TcpStreams();
  Result<std::unique_ptr<TcpLink>> link = TcpLink::Create(std::move(accepted), 3, 1);
  BOOST_TEST_REQUIRE(link.ok(), link.status().message());
  const std::vector<float> values = {0.5f, -2.0f};
  BOOST_TEST_REQUIRE(link.value()->Send(77, values, In(5s)).ok());
  Result<net::Frame> f = raw.Read(5s);
  BOOST_TEST_REQUIRE(f.ok(), f.status().message());
  BOOST_TEST((f.value().header.type == net::MessageType::kFloats));
  BOOST_TEST(f.value().header.tag == 77u);
  BOOST_TEST(f.value().header.sender == 3u);
  BOOST_TEST(f.value().payload.size() == sizeof(float) * values.size());
  BOOST_TEST(std::memcmp(f.value().payload.data(), values.data(), f.value().payload.size()) == 0);
}

BOOST_AUTO_TEST_CASE(tcp_links_without_checksums_send_unchecked_frames_with_crc_zero) {
  auto [raw, accepted] = TcpStreams();
  Result<std::unique_ptr<TcpLink>> link = TcpLink::Create(std::move(accepted), 3, 1);
  BOOST_TEST_REQUIRE(link.ok(), link.status().message());
  link.value()->SetSendChecksums(false);
  const std::vector<float> values = {0.5f, -2.0f};
  BOOST_TEST_REQUIRE(link.value()->Send(78, values, In(5s)).ok());
  Result<net::Frame> f = raw.Read(5s);
  BOOST_TEST_REQUIRE(f.ok(), f.status().message());
  BOOST_TEST((f.value().header.type == net::MessageType::kUncheckedFloats));
  BOOST_TEST(f.value().header.crc == 0u);
  BOOST_TEST(std::memcmp(f.value().payload.data(), values.data(), f.value().payload.size()) == 0);
  // The link reads either kind, whatever it sends itself.
  const std::span<const std::uint8_t> payload[] = {net::FloatBytes(values)};
  for (const net::MessageType type : {net::MessageType::kFloats, net::MessageType::kUncheckedFloats}) {
    BOOST_TEST_REQUIRE(raw.Write(type, 0, 1, 79, payload, 5s).ok());
    std::vector<float> out(values.size());
    BOOST_TEST_REQUIRE(link.value()->Recv(79, out, In(5s)).ok());
    BOOST_TEST(out == values);
  }
}

BOOST_AUTO_TEST_CASE(tcp_links_receive_into_a_buffer_that_holds_a_rings_send_ahead) {
  auto [raw, accepted] = TcpStreams();
  const int fd = accepted.fd();
  Result<std::unique_ptr<TcpLink>> link = TcpLink::Create(std::move(accepted), 0, 1);
  BOOST_TEST_REQUIRE(link.ok(), link.status().message());
  int bytes = 0;
  socklen_t size = sizeof bytes;
  BOOST_TEST_REQUIRE(::getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, &size) == 0);
  long allowed = 0;
  std::ifstream("/proc/sys/net/core/rmem_max") >> allowed;
  if (allowed >= TcpLink::kReceiveBufferBytes) {
    BOOST_TEST(bytes == 2 * TcpLink::kReceiveBufferBytes);  // Linux doubles what it is asked
  } else {
    BOOST_TEST_MESSAGE("net.core.rmem_max is " << allowed << ": autotuning keeps the buffer");
    BOOST_TEST(bytes < 2 * TcpLink::kReceiveBufferBytes);
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace link_test
}  // namespace dtrain::dist
