// ShmLink beyond the Link contract that link_test.cc checks on every transport: messages larger
// than the ring, a peer process killed mid-message, nothing left in /dev/shm, the set-up's
// fallback to TCP across network namespaces, and the same-host check itself.
#include "core/dist/shm_link.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "core/dist/peer_links.h"
#include "core/dist/same_host.h"
#include "core/dist/tcp_link.h"
#include "core/net/frame_stream.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace shm_link_test {

using namespace std::chrono_literals;
using testing::Mentions;

Deadline In(Clock::duration d) { return Clock::now() + d; }

// A listening socket on 127.0.0.1 and its port.
struct Listener {
  int fd = -1;
  std::uint16_t port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    auto* sa = reinterpret_cast<sockaddr*>(&addr);
    BOOST_TEST_REQUIRE(fd >= 0);
    BOOST_TEST_REQUIRE(::bind(fd, sa, len) == 0);
    BOOST_TEST_REQUIRE(::listen(fd, 4) == 0);
    BOOST_TEST_REQUIRE(::getsockname(fd, sa, &len) == 0);
    port = ntohs(addr.sin_port);
  }
  ~Listener() { ::close(fd); }
  net::FrameStream Connect() const {
    Result<net::FrameStream> s = net::FrameStream::ConnectTcp("127.0.0.1", port, 5s);
    BOOST_TEST_REQUIRE(s.ok(), s.status().message());
    return std::move(s).value();
  }
  net::FrameStream Accept() const {
    const int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    BOOST_TEST_REQUIRE(c >= 0);
    return net::FrameStream(c);
  }
};

// Both ends of one ShmLink in this process: a is rank 0 (the creator), b rank 1.
struct Pair {
  std::unique_ptr<ShmLink> a, b;
};

Pair MakePair(const ShmOptions& options = {}) {
  Listener l;
  net::FrameStream connected = l.Connect();
  net::FrameStream accepted = l.Accept();
  auto opener = std::async(std::launch::async, [&] {
    return ShmLink::Create(std::move(accepted), ShmRole::kOpener, 1, 0, "", In(5s), options);
  });
  Result<std::unique_ptr<ShmLink>> a =
      ShmLink::Create(std::move(connected), ShmRole::kCreator, 0, 1, "", In(5s), options);
  Result<std::unique_ptr<ShmLink>> b = opener.get();
  BOOST_TEST_REQUIRE(a.ok(), a.status().message());
  BOOST_TEST_REQUIRE(b.ok(), b.status().message());
  return {std::move(a).value(), std::move(b).value()};
}

// Entries of /dev/shm whose name this code makes.
int SegmentsLeft() {
  int n = 0;
  if (DIR* d = ::opendir("/dev/shm")) {
    while (const dirent* e = ::readdir(d)) {
      if (std::string(e->d_name).starts_with("dtrain-")) ++n;
    }
    ::closedir(d);
  }
  return n;
}

// Whether no dtrain segment is in /dev/shm, waiting up to 5 s for one to go: tests running at
// the same time (ctest -j) hold theirs only between creating and opening them, while one that
// this test left behind stays.
bool NoSegmentsLeft() {
  for (int i = 0; i < 500; ++i) {
    if (SegmentsLeft() == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::vector<std::size_t> Sizes() {
  // Floats: empty, tiny, around a 64 KiB ring's quarter (a piece) and whole, and far beyond.
  return {0, 1, 3, 1000, 4095, 4096, 4097, 16383, 16384, 16385, 100'003, 1 << 20, 3'000'001};
}

BOOST_AUTO_TEST_SUITE(dist_shm_link)

BOOST_AUTO_TEST_CASE(messages_of_every_size_arrive_bit_exact_also_larger_than_the_ring) {
  for (std::size_t ring : {std::size_t{64} << 10, std::size_t{4} << 20}) {
    BOOST_TEST_CONTEXT("ring " << ring << " bytes") {
      Pair p = MakePair({.ring_bytes = ring});
      const std::vector<std::size_t> sizes = Sizes();
      Status sent;
      std::jthread sender([&] {
        for (std::size_t i = 0; i < sizes.size() && sent.ok(); ++i) {
          sent = p.a->Send(static_cast<std::uint32_t>(100 + i),
                           testing::Input(static_cast<int>(i), sizes[i]), In(20s));
        }
      });
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        std::vector<float> out(sizes[i]);
        Result<std::uint32_t> tag = p.b->RecvAnyTag(out, In(20s));
        BOOST_TEST_REQUIRE(tag.ok(), tag.status().message());
        BOOST_TEST(tag.value() == 100 + i);
        BOOST_TEST(testing::SameBits(out, testing::Input(static_cast<int>(i), sizes[i])),
                   sizes[i] << " floats");
      }
      sender.join();
      BOOST_TEST(sent.ok(), sent.message());
    }
  }
  BOOST_TEST(NoSegmentsLeft());
}

BOOST_AUTO_TEST_CASE(a_fold_sees_every_float_in_order_straight_from_the_ring) {
  // A 4 KiB ring: messages wrap around it in many pieces.
  Pair p = MakePair({.ring_bytes = 4 << 10});
  const std::vector<std::size_t> sizes = {0, 1, 100, 1021, 1024, 5000, 100'003};
  Status sent;
  std::jthread sender([&] {
    for (std::size_t i = 0; i < sizes.size() && sent.ok(); ++i) {
      const std::vector<float> v = testing::Input(static_cast<int>(i), sizes[i]);
      sent = p.a->Send(static_cast<std::uint32_t>(i), v, In(20s));
      if (sent.ok()) sent = p.a->Send(static_cast<std::uint32_t>(1000 + i), v, In(20s));
    }
  });
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::vector<float> want = testing::Input(static_cast<int>(i), sizes[i]);
    // Folded: pieces in order, together the message; `out` untouched.
    std::vector<float> out(sizes[i], -1.0f), folded;
    std::size_t pieces = 0;
    Result<Link::Received> r = p.b->RecvFold(
        out, [&](std::uint32_t tag) { return tag == i; },
        [&](std::size_t offset, std::span<const float> floats) {
          BOOST_TEST(offset == folded.size());
          folded.insert(folded.end(), floats.begin(), floats.end());
          ++pieces;
        },
        In(20s));
    BOOST_TEST_REQUIRE(r.ok(), r.status().message());
    BOOST_TEST(r.value().folded);
    BOOST_TEST(testing::SameBits(folded, want), sizes[i] << " floats in " << pieces << " pieces");
    BOOST_TEST(std::all_of(out.begin(), out.end(), [](float x) { return x == -1.0f; }));
    // Declined: the message lands in `out`, and nothing is folded.
    r = p.b->RecvFold(
        out, [](std::uint32_t) { return false; },
        [&](std::size_t, std::span<const float>) { BOOST_FAIL("folded a declined message"); },
        In(20s));
    BOOST_TEST_REQUIRE(r.ok(), r.status().message());
    BOOST_TEST(!r.value().folded);
    BOOST_TEST(r.value().tag == 1000 + i);
    BOOST_TEST(testing::SameBits(out, want));
  }
  sender.join();
  BOOST_TEST(sent.ok(), sent.message());
}

BOOST_AUTO_TEST_CASE(a_tag_or_length_mismatch_names_both_sides_and_the_peer) {
  Pair p = MakePair();
  BOOST_TEST(p.a->peer().starts_with("rank 1 (127.0.0.1:"));
  BOOST_TEST(p.b->peer().starts_with("rank 0 (127.0.0.1:"));
  const std::vector<float> four(4, 1.0f);
  BOOST_TEST_REQUIRE(p.a->Send(12, four, In(5s)).ok());
  std::vector<float> out(4);
  const Status tag = p.b->Recv(11, out, In(5s));
  BOOST_TEST_REQUIRE(!tag.ok());
  BOOST_TEST(Mentions(tag.message(), "tagged 12"));
  BOOST_TEST(Mentions(tag.message(), "tagged 11"));
  BOOST_TEST(Mentions(tag.message(), p.b->peer()));
  BOOST_TEST_REQUIRE(p.b->Send(1, four, In(5s)).ok());
  std::vector<float> three(3);
  const Status length = p.a->Recv(1, three, In(5s));
  BOOST_TEST_REQUIRE(!length.ok());
  BOOST_TEST(Mentions(length.message(), "(3 floats)"));
  BOOST_TEST(Mentions(length.message(), "16 bytes"));
  BOOST_TEST(Mentions(length.message(), p.a->peer()));
}

BOOST_AUTO_TEST_CASE(a_silent_peer_is_a_timeout_by_the_deadline_and_the_receive_may_be_retried) {
  Pair p = MakePair();
  std::vector<float> out(5);
  const Clock::time_point start = Clock::now();
  const Status s = p.b->Recv(1, out, In(200ms));
  const double took = testing::SecondsSince(start);
  BOOST_TEST(took >= 0.19);
  BOOST_TEST(took < 2.0);
  BOOST_TEST_REQUIRE(!s.ok());
  BOOST_TEST(Mentions(s.message(), "timeout"));
  BOOST_TEST(Mentions(s.message(), p.b->peer()));
  const std::vector<float> five = testing::Input(1, 5);
  BOOST_TEST_REQUIRE(p.a->Send(1, five, In(5s)).ok());
  const Status again = p.b->Recv(1, out, In(5s));
  BOOST_TEST(again.ok(), again.message());
  BOOST_TEST(testing::SameBits(out, five));
}

BOOST_AUTO_TEST_CASE(close_wakes_a_blocked_receive_and_a_blocked_send_at_both_ends) {
  Pair p = MakePair({.ring_bytes = 64 << 10});
  std::vector<float> out(3);
  Status received, sent;
  const std::vector<float> big(1 << 20, 2.0f);  // far more than the ring
  const Clock::time_point start = Clock::now();
  {
    std::jthread receiver([&] { received = p.b->Recv(1, out, In(60s)); });
    std::jthread sender([&] { sent = p.b->Send(1, big, In(60s)); });
    std::this_thread::sleep_for(100ms);
    p.b->Close();
  }
  BOOST_TEST(testing::SecondsSince(start) < 10.0);
  BOOST_TEST(!received.ok());
  BOOST_TEST(!sent.ok());
  // The other end: what was sent before the close arrives in part, then the link fails.
  std::vector<float> big_out(big.size());
  const Status peer = p.a->Recv(1, big_out, In(60s));
  BOOST_TEST_REQUIRE(!peer.ok());
  BOOST_TEST(Mentions(peer.message(), "closed"));
  BOOST_TEST(Mentions(peer.message(), p.a->peer()));
  BOOST_TEST(testing::SecondsSince(start) < 10.0);
}

BOOST_AUTO_TEST_CASE(both_ends_stream_large_messages_through_small_rings_at_once) {
  Pair p = MakePair({.ring_bytes = 64 << 10});
  const std::vector<float> from_a = testing::Input(0, 8 << 20), from_b = testing::Input(1, 8 << 20);
  std::vector<float> at_a(from_b.size()), at_b(from_a.size());
  Status sent_a, sent_b, got_a, got_b;
  {
    std::jthread send_a([&] { sent_a = p.a->Send(3, from_a, In(30s)); });
    std::jthread send_b([&] { sent_b = p.b->Send(3, from_b, In(30s)); });
    std::jthread recv_a([&] { got_a = p.a->Recv(3, at_a, In(30s)); });
    got_b = p.b->Recv(3, at_b, In(30s));
  }
  BOOST_TEST(sent_a.ok(), sent_a.message());
  BOOST_TEST(sent_b.ok(), sent_b.message());
  BOOST_TEST(got_a.ok(), got_a.message());
  BOOST_TEST(got_b.ok(), got_b.message());
  BOOST_TEST(testing::SameBits(at_a, from_b));
  BOOST_TEST(testing::SameBits(at_b, from_a));
}

// Forks a child that connects to `l`, becomes the creating end (rank 1) of a ShmLink, says so on
// `ready` and then runs `body`. Returns the child's pid; the parent's end is in *link.
pid_t ForkPeer(const Listener& l, const std::function<void(ShmLink&)>& body,
               std::unique_ptr<ShmLink>* link) {
  int ready[2];
  BOOST_TEST_REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  BOOST_TEST_REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(ready[0]);
    Result<net::FrameStream> s = net::FrameStream::ConnectTcp("127.0.0.1", l.port, 5s);
    if (!s.ok()) ::_exit(2);
    Result<std::unique_ptr<ShmLink>> mine = ShmLink::Create(
        std::move(s).value(), ShmRole::kCreator, 1, 0, "", In(5s), {.ring_bytes = 64 << 10});
    if (!mine.ok()) ::_exit(3);
    const char one = 1;
    if (::write(ready[1], &one, 1) != 1) ::_exit(4);
    body(*mine.value());
    ::_exit(0);
  }
  ::close(ready[1]);
  Result<std::unique_ptr<ShmLink>> mine = ShmLink::Create(
      l.Accept(), ShmRole::kOpener, 0, 1, "", In(5s), {.ring_bytes = 64 << 10});
  BOOST_TEST_REQUIRE(mine.ok(), mine.status().message());
  char byte = 0;
  BOOST_TEST_REQUIRE(::read(ready[0], &byte, 1) == 1);
  ::close(ready[0]);
  *link = std::move(mine).value();
  return pid;
}

BOOST_AUTO_TEST_CASE(a_peer_killed_mid_message_is_an_error_naming_it_well_before_the_deadline) {
  Listener l;
  std::unique_ptr<ShmLink> link;
  // The child sends a message four times the ring and blocks once the ring is full.
  const pid_t pid = ForkPeer(
      l,
      [](ShmLink& mine) {
        const std::vector<float> big(64 << 10, 1.0f);
        (void)mine.Send(7, big, In(60s));
        std::this_thread::sleep_for(60s);
      },
      &link);
  std::this_thread::sleep_for(200ms);
  BOOST_TEST_REQUIRE(::kill(pid, SIGKILL) == 0);
  BOOST_TEST_REQUIRE(::waitpid(pid, nullptr, 0) == pid);
  std::vector<float> out(64 << 10);
  const Clock::time_point start = Clock::now();
  const Status s = link->Recv(7, out, In(30s));
  BOOST_TEST(testing::SecondsSince(start) < 5.0);
  BOOST_TEST_REQUIRE(!s.ok());
  BOOST_TEST(Mentions(s.message(), "closed"));
  BOOST_TEST(Mentions(s.message(), "mid-message"));
  BOOST_TEST(Mentions(s.message(), link->peer()));
  BOOST_TEST(NoSegmentsLeft());
}

BOOST_AUTO_TEST_CASE(a_peer_killed_while_this_end_waits_is_an_error_naming_it_promptly) {
  Listener l;
  std::unique_ptr<ShmLink> link;
  const pid_t pid = ForkPeer(l, [](ShmLink&) { std::this_thread::sleep_for(60s); }, &link);
  Status s;
  const Clock::time_point start = Clock::now();
  {
    std::jthread receiver([&] {
      std::vector<float> out(10);
      s = link->Recv(1, out, In(30s));
    });
    std::this_thread::sleep_for(300ms);
    BOOST_TEST_REQUIRE(::kill(pid, SIGKILL) == 0);
  }
  BOOST_TEST(testing::SecondsSince(start) < 5.0);
  ::waitpid(pid, nullptr, 0);
  BOOST_TEST_REQUIRE(!s.ok());
  BOOST_TEST(Mentions(s.message(), "closed"));
  BOOST_TEST(Mentions(s.message(), "rank 1 (127.0.0.1:"));
  // A send that waits for space notices too.
  const std::vector<float> big(1 << 20, 1.0f);
  const Clock::time_point send_start = Clock::now();
  const Status sent = link->Send(2, big, In(30s));
  BOOST_TEST(!sent.ok());
  BOOST_TEST(testing::SecondsSince(send_start) < 5.0);
  BOOST_TEST(NoSegmentsLeft());
}

BOOST_AUTO_TEST_CASE(nothing_is_left_in_dev_shm_once_the_links_are_up) {
  Pair p = MakePair();
  BOOST_TEST(NoSegmentsLeft());
}

BOOST_AUTO_TEST_CASE(the_same_host_check_compares_every_field) {
  Result<HostIdentity> me = ThisHost();
  BOOST_TEST_REQUIRE(me.ok(), me.status().message());
  BOOST_TEST(me.value().boot_id.size() == 36u);
  BOOST_TEST(SameHost(me.value(), me.value()));
  HostIdentity other = me.value();
  other.boot_id[0] = other.boot_id[0] == 'a' ? 'b' : 'a';
  BOOST_TEST(!SameHost(me.value(), other));
  other = me.value();
  ++other.net_ns;
  BOOST_TEST(!SameHost(me.value(), other));
  other = me.value();
  ++other.ipc_ns;
  BOOST_TEST(!SameHost(me.value(), other));
  BOOST_TEST(!SameHost(HostIdentity{}, HostIdentity{}));
}

// A process in another network namespace (root only: unshare -n) is another host: the ring's
// negotiation keeps TCP with it, and messages still flow.
BOOST_AUTO_TEST_CASE(a_peer_in_another_network_namespace_gets_a_tcp_link) {
  if (::geteuid() != 0) {
    BOOST_TEST_MESSAGE("skipped: needs root for a network namespace");
    return;
  }
  Listener l;
  const pid_t pid = ::fork();
  BOOST_TEST_REQUIRE(pid >= 0);
  if (pid == 0) {
    // Connected before leaving: the socket stays in this namespace, the process does not.
    Result<net::FrameStream> s = net::FrameStream::ConnectTcp("127.0.0.1", l.port, 5s);
    if (!s.ok() || ::unshare(CLONE_NEWNET) != 0) ::_exit(2);
    Result<HostIdentity> me = ThisHost();
    if (!me.ok()) ::_exit(3);
    Result<std::unique_ptr<Link>> link =
        NegotiateLink(std::move(s).value(), ShmRole::kCreator, 1, 0, "", In(5s));
    if (!link.ok() || dynamic_cast<TcpLink*>(link.value().get()) == nullptr) ::_exit(4);
    const std::vector<float> ns = {static_cast<float>(me.value().net_ns % 1000)};
    ::_exit(link.value()->Send(5, ns, In(5s)).ok() ? 0 : 5);
  }
  Result<std::unique_ptr<Link>> link =
      NegotiateLink(l.Accept(), ShmRole::kOpener, 0, 1, "", In(5s));
  BOOST_TEST_REQUIRE(link.ok(), link.status().message());
  BOOST_TEST(dynamic_cast<TcpLink*>(link.value().get()) != nullptr);
  std::vector<float> got(1);
  const Status r = link.value()->Recv(5, got, In(5s));
  BOOST_TEST(r.ok(), r.message());
  int status = 0;
  ::waitpid(pid, &status, 0);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), "child status " << status);
  BOOST_TEST(got[0] != static_cast<float>(ThisHost().value().net_ns % 1000));
}

BOOST_AUTO_TEST_CASE(processes_of_one_host_negotiate_shared_memory) {
  Listener l;
  net::FrameStream connected = l.Connect();
  net::FrameStream accepted = l.Accept();
  auto opener = std::async(std::launch::async, [&] {
    return NegotiateLink(std::move(accepted), ShmRole::kOpener, 1, 0, "", In(5s));
  });
  Result<std::unique_ptr<Link>> a =
      NegotiateLink(std::move(connected), ShmRole::kCreator, 0, 1, "", In(5s));
  Result<std::unique_ptr<Link>> b = opener.get();
  BOOST_TEST_REQUIRE(a.ok(), a.status().message());
  BOOST_TEST_REQUIRE(b.ok(), b.status().message());
  BOOST_TEST(dynamic_cast<ShmLink*>(a.value().get()) != nullptr);
  BOOST_TEST(dynamic_cast<ShmLink*>(b.value().get()) != nullptr);
  const std::vector<float> v = testing::Input(2, 777);
  BOOST_TEST_REQUIRE(a.value()->Send(9, v, In(5s)).ok());
  std::vector<float> out(v.size());
  BOOST_TEST_REQUIRE(b.value()->Recv(9, out, In(5s)).ok());
  BOOST_TEST(testing::SameBits(out, v));
  BOOST_TEST(NoSegmentsLeft());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace shm_link_test
}  // namespace dtrain::dist
