// Cluster authentication: key files (modes, sizes, derivation), the challenge-response handshake
// over real sockets and as a pure state machine (wrong keys on both sides, replayed hellos and
// proofs, protocol versions, malformed messages, silent and stale peers), and data-plane tokens.
#include "core/net/auth.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/stream_pair.h"
#include "common/temp_dir.h"
#include "common/text_checks.h"

namespace dtrain::net {
namespace auth_test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::ConnectedStreams;
using testing::kGenerous;
using testing::Mentions;
using testing::StartsWith;
using testing::StreamPair;
using testing::TempDir;

const std::string kNonceA(64, 'a');
const std::string kNonceB(64, 'b');

bool IsLowerHex(std::string_view s) {
  return s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

std::string WriteKeyFile(const TempDir& dir, std::string_view name, std::string_view content,
                         mode_t mode) {
  const std::string path = dir.Write(name, content);
  BOOST_TEST_REQUIRE(::chmod(path.c_str(), mode) == 0);
  return path;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string Hello(std::string_view nonce, int protocol = kProtocolVersion) {
  return R"({"v":1,"type":"auth_hello","nonce":")" + std::string(nonce) + R"(","protocol":)" +
         std::to_string(protocol) + "}";
}

// What the server thread ended with.
struct ServerOutcome {
  Status status = Status::Error("the server thread did not run");
};

const ClusterKey kKey = ClusterKey::FromContent("0123456789abcdef0123456789abcdef");
const ClusterKey kOtherKey = ClusterKey::FromContent("fedcba9876543210fedcba9876543210");

BOOST_AUTO_TEST_SUITE(auth)

// --- key files --------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(key_file_open_to_group_or_others_is_refused_naming_path_and_mode) {
  TempDir dir;
  const struct {
    mode_t mode;
    const char* text;
  } cases[] = {{0644, "mode 0644"}, {0640, "mode 0640"}, {0604, "mode 0604"},
               {0620, "mode 0620"}, {0602, "mode 0602"}, {0610, "mode 0610"}};
  for (const auto& c : cases) {
    const std::string path = WriteKeyFile(dir, "key", std::string(32, 'k'), c.mode);
    Result<ClusterKey> key = LoadClusterKey(path);
    BOOST_TEST_REQUIRE(!key.ok(), c.text);
    BOOST_TEST(Mentions(key.status().message(), path));
    BOOST_TEST(Mentions(key.status().message(), c.text));
    BOOST_TEST(Mentions(key.status().message(), "group or others (chmod 600)"));
  }
  const std::string path = WriteKeyFile(dir, "key", std::string(32, 'k'), 0644);
  BOOST_TEST(Mentions(LoadClusterKey(path).status().message(),
                      "mode 0644: the key file must not be readable by group or others"));
}

BOOST_AUTO_TEST_CASE(key_files_of_mode_0600_and_0400_load_and_the_same_content_gives_the_same_key) {
  TempDir dir;
  const std::string content = "correct horse battery staple 1234\n";
  Result<ClusterKey> a = LoadClusterKey(WriteKeyFile(dir, "a", content, 0600));
  Result<ClusterKey> again = LoadClusterKey(dir.Path("a"));
  Result<ClusterKey> b = LoadClusterKey(WriteKeyFile(dir, "b", content, 0400));
  BOOST_TEST_REQUIRE(a.ok(), a.status().message());
  BOOST_TEST_REQUIRE(again.ok(), again.status().message());
  BOOST_TEST_REQUIRE(b.ok(), b.status().message());
  BOOST_TEST(a.value().bytes().size() == 32u);
  BOOST_TEST(std::ranges::equal(a.value().bytes(), again.value().bytes()));
  BOOST_TEST(std::ranges::equal(a.value().bytes(), b.value().bytes()));
  BOOST_TEST(std::ranges::equal(a.value().bytes(), ClusterKey::FromContent(content).bytes()));
  // An editor's trailing newline (or its absence) does not change the key.
  Result<ClusterKey> no_newline =
      LoadClusterKey(WriteKeyFile(dir, "c", "correct horse battery staple 1234", 0600));
  BOOST_TEST_REQUIRE(no_newline.ok(), no_newline.status().message());
  BOOST_TEST(std::ranges::equal(a.value().bytes(), no_newline.value().bytes()));
}

BOOST_AUTO_TEST_CASE(different_key_file_contents_give_different_keys) {
  TempDir dir;
  Result<ClusterKey> a = LoadClusterKey(WriteKeyFile(dir, "a", "0123456789abcdef-one", 0600));
  Result<ClusterKey> b = LoadClusterKey(WriteKeyFile(dir, "b", "0123456789abcdef-two", 0600));
  Result<ClusterKey> c = LoadClusterKey(WriteKeyFile(dir, "c", " 0123456789abcdef-one", 0600));
  BOOST_TEST_REQUIRE((a.ok() && b.ok() && c.ok()));
  BOOST_TEST(!std::ranges::equal(a.value().bytes(), b.value().bytes()));
  BOOST_TEST(!std::ranges::equal(a.value().bytes(), c.value().bytes()));
  // The key is derived, not the file's bytes themselves.
  const std::string_view raw = "0123456789abcdef-one";
  BOOST_TEST(!std::ranges::equal(a.value().bytes().first(16),
                                 std::span(reinterpret_cast<const std::uint8_t*>(raw.data()), 16)));
}

BOOST_AUTO_TEST_CASE(too_short_key_file_is_refused_and_sixteen_bytes_are_enough) {
  TempDir dir;
  const std::string short_path = WriteKeyFile(dir, "short", "0123456789abcde\n", 0600);
  Result<ClusterKey> too_short = LoadClusterKey(short_path);
  BOOST_TEST_REQUIRE(!too_short.ok());
  BOOST_TEST(Mentions(too_short.status().message(), short_path));
  BOOST_TEST(Mentions(too_short.status().message(), "15 bytes"));
  const std::string blank = WriteKeyFile(dir, "blank", std::string(40, '\n'), 0600);
  BOOST_TEST(Mentions(LoadClusterKey(blank).status().message(), "0 bytes"));
  const std::string empty = WriteKeyFile(dir, "empty", "", 0600);
  BOOST_TEST(!LoadClusterKey(empty).ok());
  Result<ClusterKey> enough = LoadClusterKey(WriteKeyFile(dir, "ok", "0123456789abcdef", 0600));
  BOOST_TEST(enough.ok(), enough.status().message());
}

BOOST_AUTO_TEST_CASE(huge_key_file_is_refused) {
  TempDir dir;
  const std::string path = WriteKeyFile(dir, "huge", std::string(kMaxKeyFile + 1, 'x'), 0600);
  Result<ClusterKey> key = LoadClusterKey(path);
  BOOST_TEST_REQUIRE(!key.ok());
  BOOST_TEST(Mentions(key.status().message(), path));
  BOOST_TEST(Mentions(key.status().message(), "larger than"));
}

BOOST_AUTO_TEST_CASE(directory_fifo_and_missing_key_files_are_refused_naming_the_path) {
  TempDir dir;
  const std::string sub = dir.Path("sub");
  BOOST_TEST_REQUIRE(::mkdir(sub.c_str(), 0700) == 0);
  Result<ClusterKey> d = LoadClusterKey(sub);
  BOOST_TEST_REQUIRE(!d.ok());
  BOOST_TEST(Mentions(d.status().message(), sub));
  BOOST_TEST(Mentions(d.status().message(), "not a regular file"));

  const std::string fifo = dir.Path("fifo");
  BOOST_TEST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto start = Clock::now();
  Result<ClusterKey> f = LoadClusterKey(fifo);  // must not wait for a writer
  BOOST_TEST((Clock::now() - start < kGenerous));
  BOOST_TEST_REQUIRE(!f.ok());
  BOOST_TEST(Mentions(f.status().message(), "not a regular file"));

  const std::string missing = dir.Path("missing");
  Result<ClusterKey> m = LoadClusterKey(missing);
  BOOST_TEST_REQUIRE(!m.ok());
  BOOST_TEST(Mentions(m.status().message(), missing));
  BOOST_TEST(Mentions(m.status().message(), "No such file"));
}

BOOST_AUTO_TEST_CASE(write_new_key_file_makes_mode_0600_refuses_overwrite_and_loads_back) {
  TempDir dir;
  const std::string path = dir.Path("cluster.key");
  const mode_t old_umask = ::umask(0);  // a permissive umask must not widen the mode
  const Status written = WriteNewKeyFile(path);
  ::umask(old_umask);
  BOOST_TEST_REQUIRE(written.ok(), written.message());
  struct stat st {};
  BOOST_TEST_REQUIRE(::stat(path.c_str(), &st) == 0);
  BOOST_TEST(S_ISREG(st.st_mode));
  BOOST_TEST((st.st_mode & 07777) == 0600u);
  const std::string content = ReadAll(path);
  BOOST_TEST_REQUIRE(content.size() == 65u);
  BOOST_TEST(content.back() == '\n');
  BOOST_TEST(IsLowerHex(std::string_view(content).substr(0, 64)));

  Result<ClusterKey> loaded = LoadClusterKey(path);
  BOOST_TEST_REQUIRE(loaded.ok(), loaded.status().message());
  BOOST_TEST(std::ranges::equal(loaded.value().bytes(), ClusterKey::FromContent(content).bytes()));

  const Status again = WriteNewKeyFile(path);
  BOOST_TEST_REQUIRE(!again.ok());
  BOOST_TEST(Mentions(again.message(), path));
  BOOST_TEST(Mentions(again.message(), "already exists"));
  BOOST_TEST(ReadAll(path) == content);  // untouched

  // A second new key is another key.
  const std::string other = dir.Path("other.key");
  BOOST_TEST_REQUIRE(WriteNewKeyFile(other).ok());
  BOOST_TEST(ReadAll(other) != content);

  // A symlink planted at the path is not followed.
  const std::string target = dir.Path("target");
  const std::string link = dir.Path("link.key");
  BOOST_TEST_REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  BOOST_TEST(!WriteNewKeyFile(link).ok());
  BOOST_TEST(::access(target.c_str(), F_OK) != 0);
}

// --- NonceCache -------------------------------------------------------------------------------

std::array<std::uint8_t, kNonceBytes> NonceOf(std::uint8_t fill) {
  std::array<std::uint8_t, kNonceBytes> n;
  n.fill(fill);
  return n;
}

BOOST_AUTO_TEST_CASE(nonce_cache_refuses_a_repeat_and_forgets_the_oldest_beyond_capacity) {
  NonceCache cache(2);
  BOOST_TEST(cache.Insert(NonceOf(1)));
  BOOST_TEST(!cache.Insert(NonceOf(1)));
  BOOST_TEST(cache.Insert(NonceOf(2)));
  BOOST_TEST(cache.Insert(NonceOf(3)));  // forgets 1
  BOOST_TEST(cache.size() == 2u);
  BOOST_TEST(!cache.Insert(NonceOf(2)));
  BOOST_TEST(!cache.Insert(NonceOf(3)));
  BOOST_TEST(cache.Insert(NonceOf(1)));
}

BOOST_AUTO_TEST_CASE(nonce_cache_admits_one_nonce_once_across_threads) {
  NonceCache cache;
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        if (cache.Insert(NonceOf(static_cast<std::uint8_t>(i)))) ++admitted;
        std::array<std::uint8_t, kNonceBytes> own = NonceOf(0);
        own[0] = static_cast<std::uint8_t>(t);
        own[1] = static_cast<std::uint8_t>(i);
        own[2] = 0xEE;
        BOOST_CHECK(cache.Insert(own));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  BOOST_TEST(admitted.load() == 200);
}

// --- The handshake over real sockets ----------------------------------------------------------

BOOST_AUTO_TEST_CASE(handshake_over_a_socketpair_succeeds_with_the_same_key) {
  StreamPair p = ConnectedStreams();
  NonceCache nonces;
  ServerOutcome server;
  std::thread t([&] { server.status = AuthenticateServer(p.server, kKey, nonces, kGenerous); });
  const Status client = AuthenticateClient(p.client, kKey, kGenerous);
  t.join();
  BOOST_TEST(client.ok(), client.message());
  BOOST_TEST(server.status.ok(), server.status.message());
  BOOST_TEST(nonces.size() == 1u);
  // The connection is usable afterwards, in both directions.
  BOOST_TEST_REQUIRE(p.client.WriteString(MessageType::kControl, 0, 0, R"({"v":1})", 1s).ok());
  Result<Frame> f = p.server.Read(1s);
  BOOST_TEST_REQUIRE(f.ok(), f.status().message());
  BOOST_TEST(f.value().payload == R"({"v":1})");
}

BOOST_AUTO_TEST_CASE(handshake_over_loopback_tcp_succeeds_with_the_same_key) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  BOOST_TEST_REQUIRE(listener >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  BOOST_TEST_REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  BOOST_TEST_REQUIRE(::listen(listener, 4) == 0);
  socklen_t len = sizeof addr;
  BOOST_TEST_REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const std::uint16_t port = ntohs(addr.sin_port);

  NonceCache nonces;
  ServerOutcome server;
  std::thread t([&] {
    pollfd pfd{.fd = listener, .events = POLLIN, .revents = 0};
    if (::poll(&pfd, 1, 5000) != 1) return;
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    FrameStream stream(fd);
    server.status = AuthenticateServer(stream, kKey, nonces, kGenerous);
  });
  Result<FrameStream> client = FrameStream::ConnectTcp("127.0.0.1", port, kGenerous);
  Status client_status =
      client.ok() ? AuthenticateClient(client.value(), kKey, kGenerous) : client.status();
  t.join();
  ::close(listener);
  BOOST_TEST(client_status.ok(), client_status.message());
  BOOST_TEST(server.status.ok(), server.status.message());
}

BOOST_AUTO_TEST_CASE(wrong_key_fails_on_both_sides) {
  StreamPair p = ConnectedStreams();
  NonceCache nonces;
  ServerOutcome server;
  std::thread t([&] { server.status = AuthenticateServer(p.server, kKey, nonces, kGenerous); });
  const Status client = AuthenticateClient(p.client, kOtherKey, kGenerous);
  p.client.Close();
  t.join();
  BOOST_TEST_REQUIRE(!client.ok());
  BOOST_TEST(Mentions(client.message(), "could not prove it holds the cluster key"));
  BOOST_TEST(Mentions(client.message(), p.client.peer()));
  BOOST_TEST_REQUIRE(!server.status.ok());
  BOOST_TEST(StartsWith(server.status.message(), "authentication of"));
  BOOST_TEST(Mentions(server.status.message(), "gave up"));
}

BOOST_AUTO_TEST_CASE(a_client_that_skips_checking_the_server_is_still_denied) {
  // A client with the wrong key that sends a proof anyway (here: a made-up one) is refused, and is
  // told so in a failure reply.
  StreamPair p = ConnectedStreams();
  NonceCache nonces;
  ServerOutcome server;
  std::thread t([&] { server.status = AuthenticateServer(p.server, kKey, nonces, kGenerous); });
  BOOST_TEST_REQUIRE(p.client.WriteString(MessageType::kControl, 0, 0, Hello(kNonceA), 1s).ok());
  Result<Frame> challenge = p.client.Read(kGenerous);
  BOOST_TEST_REQUIRE(challenge.ok(), challenge.status().message());
  BOOST_TEST(Mentions(challenge.value().payload, R"("type":"auth_challenge")"));
  const std::string bogus = R"({"v":1,"type":"auth_proof","proof":")" + kNonceB + R"("})";
  BOOST_TEST_REQUIRE(p.client.WriteString(MessageType::kControl, 0, 0, bogus, 1s).ok());
  Result<Frame> reply = p.client.Read(kGenerous);
  t.join();
  BOOST_TEST_REQUIRE(reply.ok(), reply.status().message());
  BOOST_TEST(Mentions(reply.value().payload, R"("ok":false)"));
  BOOST_TEST(Mentions(reply.value().payload, R"("code":"denied")"));
  BOOST_TEST_REQUIRE(!server.status.ok());
  BOOST_TEST(Mentions(server.status.message(), "does not match"));
}

BOOST_AUTO_TEST_CASE(a_refusing_server_is_reported_as_authentication_refused_by_the_peer) {
  StreamPair p = ConnectedStreams();
  p.client.set_peer_name("daemon-7:7070");
  std::thread t([&] {
    Result<Frame> hello = p.server.Read(kGenerous);
    if (!hello.ok()) return;
    (void)p.server.WriteString(MessageType::kControl, 0, 0,
                               R"({"v":1,"ok":false,"code":"denied","error":"go away"})", 1s);
  });
  const Status client = AuthenticateClient(p.client, kKey, kGenerous);
  t.join();
  BOOST_TEST_REQUIRE(!client.ok());
  BOOST_TEST(StartsWith(client.message(), "authentication refused by daemon-7:7070: go away"));
}

BOOST_AUTO_TEST_CASE(a_silent_client_times_out_as_a_stale_handshake) {
  StreamPair p = ConnectedStreams();
  NonceCache nonces;
  const auto start = Clock::now();
  const Status s = AuthenticateServer(p.server, kKey, nonces, 200ms);
  const auto took = Clock::now() - start;
  BOOST_TEST_REQUIRE(!s.ok());
  BOOST_TEST(Mentions(s.message(), "timeout"));
  BOOST_TEST(Mentions(s.message(), "200 ms"));
  // Told apart from other read failures by the read's kTimeout code.
  BOOST_TEST(Mentions(s.message(), "timeout: no auth_hello from "));
  BOOST_TEST(Mentions(s.message(), "within the handshake's 200 ms"));
  BOOST_TEST((took >= 150ms));
  BOOST_TEST((took < kGenerous));
}

BOOST_AUTO_TEST_CASE(a_client_that_stops_after_the_hello_times_out_within_the_whole_deadline) {
  StreamPair p = ConnectedStreams();
  NonceCache nonces;
  BOOST_TEST_REQUIRE(p.client.WriteString(MessageType::kControl, 0, 0, Hello(kNonceA), 1s).ok());
  const auto start = Clock::now();
  const Status s = AuthenticateServer(p.server, kKey, nonces, 300ms);
  const auto took = Clock::now() - start;
  BOOST_TEST_REQUIRE(!s.ok());
  BOOST_TEST(Mentions(s.message(), "timeout"));
  BOOST_TEST(Mentions(s.message(), "auth_proof"));
  BOOST_TEST((took < 2s));
}

BOOST_AUTO_TEST_CASE(a_silent_server_times_out_the_client) {
  StreamPair p = ConnectedStreams();
  const Status s = AuthenticateClient(p.client, kKey, 200ms);
  BOOST_TEST_REQUIRE(!s.ok());
  BOOST_TEST(Mentions(s.message(), "timeout"));
}

BOOST_AUTO_TEST_CASE(a_non_control_frame_in_the_handshake_is_refused) {
  StreamPair p = ConnectedStreams();
  NonceCache nonces;
  BOOST_TEST_REQUIRE(p.client.WriteString(MessageType::kHeartbeat, 0, 0, "", 1s).ok());
  const Status s = AuthenticateServer(p.server, kKey, nonces, kGenerous);
  BOOST_TEST_REQUIRE(!s.ok());
  BOOST_TEST(Mentions(s.message(), "heartbeat"));
}

// --- The state machines ------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(state_machines_complete_a_handshake_without_a_transport) {
  NonceCache nonces;
  ServerHandshake server(kKey, nonces, "client-1");
  ClientHandshake client(kKey, "server-1");
  Result<std::string> challenge = server.OnHello(client.Hello());
  BOOST_TEST_REQUIRE(challenge.ok(), challenge.status().message());
  BOOST_TEST(Mentions(challenge.value(), R"("ok":true)"));
  Result<std::string> proof = client.OnChallenge(challenge.value());
  BOOST_TEST_REQUIRE(proof.ok(), proof.status().message());
  BOOST_TEST(!server.authenticated());
  const Status accepted = server.OnProof(proof.value());
  BOOST_TEST_REQUIRE(accepted.ok(), accepted.message());
  BOOST_TEST(server.authenticated());
  const Status done = client.OnResult(ServerHandshake::OkReply());
  BOOST_TEST(done.ok(), done.message());
}

BOOST_AUTO_TEST_CASE(every_hello_carries_a_fresh_nonce_and_every_challenge_a_fresh_one_too) {
  NonceCache nonces;
  std::set<std::string> seen;
  for (int i = 0; i < 4; ++i) {
    ClientHandshake client(kKey);
    BOOST_TEST(client.Hello() == client.Hello());  // stable within one handshake
    BOOST_TEST(seen.insert(client.Hello()).second);
    ServerHandshake server(kKey, nonces);
    Result<std::string> challenge = server.OnHello(client.Hello());
    BOOST_TEST_REQUIRE(challenge.ok(), challenge.status().message());
    BOOST_TEST(seen.insert(challenge.value()).second);
  }
}

BOOST_AUTO_TEST_CASE(a_replayed_hello_is_refused) {
  NonceCache nonces;
  ServerHandshake first(kKey, nonces);
  BOOST_TEST_REQUIRE(first.OnHello(Hello(kNonceA)).ok());
  ServerHandshake second(kKey, nonces, "10.0.0.9:41000");
  Result<std::string> replay = second.OnHello(Hello(kNonceA));
  BOOST_TEST_REQUIRE(!replay.ok());
  BOOST_TEST(Mentions(replay.status().message(), "replay"));
  BOOST_TEST(Mentions(replay.status().message(), "10.0.0.9:41000"));
  BOOST_TEST(Mentions(second.FailureReply(), R"("ok":false)"));
  BOOST_TEST(Mentions(second.FailureReply(), R"("code":"replay")"));
  // Another nonce is fine.
  ServerHandshake third(kKey, nonces);
  BOOST_TEST(third.OnHello(Hello(kNonceB)).ok());
}

BOOST_AUTO_TEST_CASE(a_replayed_proof_is_denied_because_the_server_nonce_is_fresh) {
  NonceCache nonces;
  // A successful handshake, recorded by an eavesdropper.
  ClientHandshake client(kKey);
  ServerHandshake server(kKey, nonces);
  const std::string hello = client.Hello();
  Result<std::string> challenge = server.OnHello(hello);
  BOOST_TEST_REQUIRE(challenge.ok());
  Result<std::string> recorded = client.OnChallenge(challenge.value());
  BOOST_TEST_REQUIRE(recorded.ok());
  BOOST_TEST_REQUIRE(server.OnProof(recorded.value()).ok());

  // The recorded proof, after a new hello (the old one would be refused as a replay).
  ServerHandshake second(kKey, nonces);
  BOOST_TEST_REQUIRE(second.OnHello(Hello(kNonceA)).ok());
  const Status denied = second.OnProof(recorded.value());
  BOOST_TEST_REQUIRE(!denied.ok());
  BOOST_TEST(Mentions(denied.message(), "does not match"));
  BOOST_TEST(Mentions(second.FailureReply(), R"("code":"denied")"));
  BOOST_TEST(!second.authenticated());

  // The whole recording replayed to a server whose cache has forgotten the hello.
  NonceCache forgetful;
  ServerHandshake third(kKey, forgetful);
  BOOST_TEST_REQUIRE(third.OnHello(hello).ok());
  BOOST_TEST(!third.OnProof(recorded.value()).ok());
  BOOST_TEST(!third.authenticated());
}

BOOST_AUTO_TEST_CASE(a_proof_is_not_accepted_twice_or_out_of_order) {
  NonceCache nonces;
  ServerHandshake early(kKey, nonces);
  BOOST_TEST(
      Mentions(early.OnProof(R"({"v":1,"type":"auth_proof","proof":")" + kNonceA + "\"}").message(),
               "before auth_hello"));

  ClientHandshake client(kKey);
  ServerHandshake server(kKey, nonces);
  Result<std::string> challenge = server.OnHello(client.Hello());
  BOOST_TEST_REQUIRE(challenge.ok());
  BOOST_TEST(!server.OnHello(Hello(kNonceB)).ok());  // a second hello ends the handshake
  Result<std::string> proof = client.OnChallenge(challenge.value());
  BOOST_TEST_REQUIRE(proof.ok());
  BOOST_TEST(!server.OnProof(proof.value()).ok());
  BOOST_TEST(!server.authenticated());
}

BOOST_AUTO_TEST_CASE(the_server_proof_binds_the_client_nonce) {
  // A challenge recorded for one client does not convince another client.
  NonceCache nonces;
  ClientHandshake first(kKey), second(kKey);
  ServerHandshake server(kKey, nonces);
  Result<std::string> challenge = server.OnHello(first.Hello());
  BOOST_TEST_REQUIRE(challenge.ok());
  Result<std::string> fooled = second.OnChallenge(challenge.value());
  BOOST_TEST_REQUIRE(!fooled.ok());
  BOOST_TEST(Mentions(fooled.status().message(), "could not prove it holds the cluster key"));
  BOOST_TEST(Mentions(second.AbortMessage(), R"("type":"auth_abort")"));
  // A second client with the right key accepts it.
  BOOST_TEST(first.OnChallenge(challenge.value()).ok());
}

BOOST_AUTO_TEST_CASE(a_client_proof_cannot_be_reflected_as_a_server_proof) {
  // The server signs (client nonce, server nonce) under "server", the client (server, client)
  // under "client": mirroring a client's own hello back cannot produce a valid challenge.
  NonceCache nonces;
  ClientHandshake client(kKey);
  ServerHandshake server(kKey, nonces);
  Result<std::string> challenge = server.OnHello(client.Hello());
  BOOST_TEST_REQUIRE(challenge.ok());
  Result<std::string> proof = client.OnChallenge(challenge.value());
  BOOST_TEST_REQUIRE(proof.ok());
  // Swap labels by building a challenge from the client's proof and nonce.
  const std::string p = proof.value();
  const std::string client_proof = p.substr(p.find(R"("proof":")") + 9, 64);
  ClientHandshake victim(kKey);
  const std::string hello = victim.Hello();
  const std::string nonce = hello.substr(hello.find(R"("nonce":")") + 9, 64);
  const std::string mirrored = R"({"v":1,"ok":true,"type":"auth_challenge","nonce":")" + nonce +
                               R"(","proof":")" + client_proof + R"("})";
  BOOST_TEST(!victim.OnChallenge(mirrored).ok());
}

BOOST_AUTO_TEST_CASE(a_hello_of_another_protocol_version_is_refused) {
  NonceCache nonces;
  ServerHandshake server(kKey, nonces);
  Result<std::string> r = server.OnHello(Hello(kNonceA, kProtocolVersion + 1));
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST(Mentions(r.status().message(), "protocol version"));
  BOOST_TEST(Mentions(r.status().message(), std::to_string(kProtocolVersion + 1)));
  BOOST_TEST(Mentions(server.FailureReply(), R"("code":"protocol")"));
}

BOOST_AUTO_TEST_CASE(malformed_hellos_are_errors_not_crashes) {
  const std::string bad_utf8 = "{\"v\":1,\"type\":\"\xff\xfe\",\"nonce\":\"" + kNonceA + "\"}";
  const std::vector<std::string> hellos = {
      "",
      "not json",
      "[]",
      "null",
      "{}",
      R"({"v":1})",
      R"({"v":2,"type":"auth_hello","nonce":")" + kNonceA + R"(","protocol":1})",
      R"({"v":"1","type":"auth_hello","nonce":")" + kNonceA + R"(","protocol":1})",
      R"({"v":1,"type":"auth_proof","nonce":")" + kNonceA + R"(","protocol":1})",
      R"({"v":1,"type":7,"nonce":")" + kNonceA + R"(","protocol":1})",
      R"({"v":1,"type":"auth_hello","protocol":1})",
      R"({"v":1,"type":"auth_hello","nonce":"abcd","protocol":1})",
      R"({"v":1,"type":"auth_hello","nonce":")" + std::string(64, 'g') + R"(","protocol":1})",
      R"({"v":1,"type":"auth_hello","nonce":")" + kNonceA + R"(0","protocol":1})",
      R"({"v":1,"type":"auth_hello","nonce":12,"protocol":1})",
      R"({"v":1,"type":"auth_hello","nonce":")" + kNonceA + R"("})",
      R"({"v":1,"type":"auth_hello","nonce":")" + kNonceA + R"(","protocol":"1"})",
      R"({"v":1,"type":"auth_hello","nonce":")" + kNonceA + R"(","protocol":1.5})",
      R"({"v":1,"type":"auth_hello","nonce":")" + kNonceA + R"(","protocol":-1})",
      R"({"v":1,"type":"auth_hello","nonce":")" + kNonceA + R"(","protocol":1e400})",
      R"({"v":1,"type":"auth_hello","nonce":")" + kNonceA +
          R"(","protocol":99999999999999999999999})",
      R"({"v":1,"type":"auth_hello","nonce":")" + kNonceA + R"(","protocol":1)",
      bad_utf8,
      Hello(kNonceA) + std::string(5000, ' '),
  };
  for (const std::string& hello : hellos) {
    NonceCache nonces;
    ServerHandshake server(kKey, nonces);
    Result<std::string> r = server.OnHello(hello);
    BOOST_TEST(!r.ok(), "accepted: " << hello);
    if (!r.ok()) BOOST_TEST(!r.status().message().empty());
    const std::string reply = server.FailureReply();
    BOOST_TEST(Mentions(reply, R"("ok":false)"));
    BOOST_TEST(nonces.size() == 0u);
  }
}

BOOST_AUTO_TEST_CASE(malformed_proofs_are_errors_not_crashes) {
  const std::vector<std::string> proofs = {
      "",
      "{",
      R"({"v":1})",
      R"({"v":1,"type":"auth_proof"})",
      R"({"v":1,"type":"auth_proof","proof":"zz"})",
      R"({"v":1,"type":"auth_proof","proof":")" + kNonceA.substr(1) + R"("})",
      R"({"v":1,"type":"auth_proof","proof":["a"]})",
      R"({"v":1,"type":"auth_hello","proof":")" + kNonceA + R"("})",
      R"({"v":1,"type":"auth_abort","error":"keys differ"})",
      R"({"v":1,"type":"auth_abort"})",
  };
  for (const std::string& proof : proofs) {
    NonceCache nonces;
    ServerHandshake server(kKey, nonces);
    BOOST_TEST_REQUIRE(server.OnHello(Hello(kNonceA)).ok());
    const Status s = server.OnProof(proof);
    BOOST_TEST(!s.ok(), "accepted: " << proof);
    BOOST_TEST(!server.authenticated());
  }
}

BOOST_AUTO_TEST_CASE(malformed_challenges_and_results_are_client_errors_not_crashes) {
  const std::vector<std::string> challenges = {
      "",
      "garbage",
      R"({"v":1,"ok":true,"type":"auth_ok"})",
      R"({"v":1,"ok":true,"type":"auth_challenge"})",
      R"({"v":1,"ok":true,"type":"auth_challenge","nonce":")" + kNonceA + R"("})",
      R"({"v":1,"ok":true,"type":"auth_challenge","nonce":")" + kNonceA + R"(","proof":"12"})",
      R"({"v":1,"ok":true,"type":"auth_challenge","nonce":")" + kNonceA + R"(","proof":")" +
          kNonceB + R"("})",
      R"({"v":1,"ok":false})",
  };
  for (const std::string& challenge : challenges) {
    ClientHandshake client(kKey, "peer-x");
    Result<std::string> r = client.OnChallenge(challenge);
    BOOST_TEST(!r.ok(), "accepted: " << challenge);
    if (!r.ok()) BOOST_TEST(Mentions(r.status().message(), "peer-x"));
  }

  NonceCache nonces;
  for (const std::string result :
       {"", "{}", R"({"v":1,"type":"auth_ok"})", R"({"v":1,"ok":true,"type":"auth_challenge"})"}) {
    ClientHandshake client(kKey);
    ServerHandshake server(kKey, nonces);
    Result<std::string> challenge = server.OnHello(client.Hello());
    BOOST_TEST_REQUIRE(challenge.ok());
    BOOST_TEST_REQUIRE(client.OnChallenge(challenge.value()).ok());
    BOOST_TEST(!client.OnResult(result).ok(), "accepted: " << result);
  }
}

BOOST_AUTO_TEST_CASE(a_proof_later_than_max_age_is_refused_as_stale) {
  NonceCache nonces;
  ClientHandshake client(kKey);
  ServerHandshake server(kKey, nonces, "slowpoke", 50ms);
  Result<std::string> challenge = server.OnHello(client.Hello());
  BOOST_TEST_REQUIRE(challenge.ok());
  Result<std::string> proof = client.OnChallenge(challenge.value());
  BOOST_TEST_REQUIRE(proof.ok());
  std::this_thread::sleep_for(120ms);
  const Status s = server.OnProof(proof.value());
  BOOST_TEST_REQUIRE(!s.ok());
  BOOST_TEST(Mentions(s.message(), "stale"));
  BOOST_TEST(Mentions(s.message(), "slowpoke"));
  BOOST_TEST(Mentions(server.FailureReply(), R"("code":"stale")"));
}

// --- Data-plane tokens ------------------------------------------------------------------------

// Data-plane tokens are drawn, never derived: what two daemons hand their job 1's first attempt
// (or one daemon two attempts) is unrelated, whatever key, job id and attempt they share.
BOOST_AUTO_TEST_CASE(random_tokens_are_hex_and_fresh) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string t = RandomToken();
    BOOST_TEST(t.size() == 64u);
    BOOST_TEST(IsLowerHex(t));
    seen.insert(t);
  }
  BOOST_TEST(seen.size() == 1000u);
}

BOOST_AUTO_TEST_CASE(tokens_equal_compares_whole_tokens) {
  const std::string t = RandomToken();
  std::string last = t;
  last.back() = last.back() == '0' ? '1' : '0';
  BOOST_TEST(TokensEqual(t, std::string(t)));
  BOOST_TEST(!TokensEqual(t, last));
  BOOST_TEST(!TokensEqual(t, t.substr(0, 63)));
  BOOST_TEST(!TokensEqual(t, ""));
  BOOST_TEST(TokensEqual("", ""));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace auth_test
}  // namespace dtrain::net
