// Cluster authentication: the shared cluster key, the challenge-response handshake that opens
// every daemon<->daemon and remote-CLI connection, and the per-job tokens of data-plane
// connections. The handshake's grammar is written down in core/net/auth.md. Built on libsodium
// (HMAC-SHA256, BLAKE2b, the system CSPRNG); no hand-made crypto.
//
//   Result<ClusterKey> key = LoadClusterKey("/etc/dtrain/cluster.key");  // refuses mode 0644
//   Status s = AuthenticateClient(stream, key.value(), 5s);  // "authentication refused by ..."
//
// The handshake proves to each side that the other holds the key, bound to both sides' fresh
// nonces and to the protocol version; it does not encrypt or sign the frames that follow.
// ServerHandshake and ClientHandshake are transport-free state machines (for the Asio daemon);
// AuthenticateServer/AuthenticateClient drive them over a blocking FrameStream.
// Thread safety: ClusterKey is a plain value (safe to copy and to share read-only); NonceCache is
// safe for concurrent use; a ServerHandshake or ClientHandshake is one thread at a time; the free
// functions are safe for concurrent use (each on its own stream).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "core/net/frame_stream.h"
#include "core/status.h"

namespace dtrain::net {

inline constexpr std::size_t kClusterKeyBytes = 32;
inline constexpr std::size_t kNonceBytes = 32;
// A key file holds at least this many bytes (after trailing whitespace) and at most kMaxKeyFile.
inline constexpr std::size_t kMinKeyFileContent = 16;
inline constexpr std::size_t kMaxKeyFile = 64 << 10;
// How long a server waits, at most, between sending its challenge and receiving the proof.
inline constexpr std::chrono::milliseconds kDefaultHandshakeMaxAge{10'000};

// The 32-byte cluster secret, BLAKE2b-256 ("dtrain cluster key v1\n" || content) of a key file's
// content (its bytes less trailing whitespace). Wiped from memory when destroyed.
class ClusterKey {
 public:
  // The same derivation as LoadClusterKey, from content already in memory (tests, tools).
  static ClusterKey FromContent(std::string_view content);
  ~ClusterKey();
  ClusterKey(const ClusterKey&) = default;
  ClusterKey& operator=(const ClusterKey&) = default;

  std::span<const std::uint8_t, kClusterKeyBytes> bytes() const { return bytes_; }
  // Whether `content` derives this key (as a key file's content would), in constant time: how
  // an HTTP client's bearer token is checked against the token file's key.
  bool Matches(std::string_view content) const;

 private:
  ClusterKey() = default;
  std::array<std::uint8_t, kClusterKeyBytes> bytes_{};
};

// Loads a key file. Refuses, with an error naming the path and what is wrong, a path that is not
// a regular file, a mode that gives group or others any access ("mode 0644: the key file must not
// be readable by group or others (chmod 600)"), content shorter than kMinKeyFileContent bytes or
// longer than kMaxKeyFile, and a file it cannot open or read.
Result<ClusterKey> LoadClusterKey(const std::string& path);

// Creates `path` holding a new random key (32 bytes from the system CSPRNG as 64 lowercase hex
// digits and a newline) with mode 0600. Refuses to overwrite anything already at `path`.
Status WriteNewKeyFile(const std::string& path);

// The client nonces a server has seen recently, so that a replayed hello is refused. Bounded: the
// oldest of `capacity` nonces is forgotten first. One per listening server, shared by all its
// handshakes. Safe for concurrent use.
class NonceCache {
 public:
  explicit NonceCache(std::size_t capacity = 4096);
  NonceCache(const NonceCache&) = delete;
  NonceCache& operator=(const NonceCache&) = delete;

  // Records `nonce`; false (and nothing changes) when it is already recorded.
  bool Insert(std::span<const std::uint8_t, kNonceBytes> nonce);
  std::size_t size() const;

 private:
  using Nonce = std::array<std::uint8_t, kNonceBytes>;
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::deque<Nonce> order_;  // oldest first
  std::set<Nonce> seen_;     // ordered, not hashed: clients choose nonces, so no hash flooding
};

// The server's side of one handshake, free of any transport:
//
//   ServerHandshake hs(key, nonces, "10.0.0.7:7070");
//   Result<std::string> challenge = hs.OnHello(hello_payload);   // send challenge, or
//   if (!challenge.ok()) { send(hs.FailureReply()); close; }     // tell the client and close
//   if (hs.OnProof(proof_payload).ok()) send(ServerHandshake::OkReply()); else { ... as above }
//
// Each step is taken once: a second hello, a proof before the hello, anything after a failure is
// refused. A proof that arrives more than `max_age` after the challenge is refused as stale.
// Error messages name `peer`. One thread at a time.
class ServerHandshake {
 public:
  // `nonces` must outlive the handshake (the listener owns it; it is shared by all handshakes).
  ServerHandshake(const ClusterKey& key, NonceCache& nonces, std::string peer = "the client",
                  std::chrono::milliseconds max_age = kDefaultHandshakeMaxAge);
  ~ServerHandshake();
  ServerHandshake(const ServerHandshake&) = delete;
  ServerHandshake& operator=(const ServerHandshake&) = delete;

  // Given the client's auth_hello payload (JSON text), returns the auth_challenge reply, or an
  // error: malformed, another protocol version, or a client nonce seen recently (a replay).
  Result<std::string> OnHello(std::string_view hello_json);
  // Given the client's auth_proof payload: OK when its proof matches; otherwise an error (wrong
  // key, stale, malformed, or the client's auth_abort).
  Status OnProof(std::string_view proof_json);

  // True after OnProof succeeded.
  bool authenticated() const { return state_ == State::kDone; }
  // The auth_ok reply, sent after OnProof succeeded.
  static std::string OkReply();
  // The failure reply for the last failed step ({"ok":false,"code":...,"error":...}), to send
  // before closing; its text says what was wrong without revealing anything about the key.
  std::string FailureReply() const;

 private:
  enum class State { kAwaitHello, kAwaitProof, kDone, kFailed };
  Status Fail(std::string code, std::string message);

  std::array<std::uint8_t, kClusterKeyBytes> key_;
  NonceCache* nonces_;  // not owned: the listener's cache, which outlives every handshake
  std::string peer_;
  std::chrono::milliseconds max_age_;
  State state_ = State::kAwaitHello;
  std::array<std::uint8_t, kNonceBytes> client_nonce_{};
  std::array<std::uint8_t, kNonceBytes> server_nonce_{};
  std::chrono::steady_clock::time_point challenged_at_{};
  std::string failure_code_;
  std::string failure_text_;
};

// The client's side of one handshake, free of any transport:
//
//   ClientHandshake hs(key, "10.0.0.7:7070");
//   send(hs.Hello());  Result<std::string> proof = hs.OnChallenge(reply);  // verifies the server
//   if (!proof.ok()) { send(hs.AbortMessage()); close; }  else send(proof.value());
//   Status done = hs.OnResult(final_reply);
//
// Error messages name `peer`. One thread at a time.
class ClientHandshake {
 public:
  explicit ClientHandshake(const ClusterKey& key, std::string peer = "the daemon");
  ~ClientHandshake();
  ClientHandshake(const ClientHandshake&) = delete;
  ClientHandshake& operator=(const ClientHandshake&) = delete;

  // The auth_hello payload, with this handshake's fresh nonce (the same text on every call).
  std::string Hello() const;
  // Given the server's reply to the hello: checks the server's proof and returns the auth_proof
  // payload to send. Errors: "authentication refused by PEER: ...", "the daemon at PEER could not
  // prove it holds the cluster key ...", a malformed reply.
  Result<std::string> OnChallenge(std::string_view challenge_json);
  // Given the server's reply to the proof: OK on auth_ok, "authentication refused by PEER: ..."
  // otherwise.
  Status OnResult(std::string_view result_json);
  // An auth_abort payload telling the server why this client gave up (after OnChallenge failed).
  std::string AbortMessage() const;

 private:
  enum class State { kAwaitChallenge, kAwaitResult, kDone, kFailed };
  Status Fail(std::string message);

  std::array<std::uint8_t, kClusterKeyBytes> key_;
  std::string peer_;
  State state_ = State::kAwaitChallenge;
  std::array<std::uint8_t, kNonceBytes> client_nonce_{};
  std::string abort_reason_;
};

// Runs the client side over `stream` (kControl frames, job 0, tag 0); `timeout` bounds the whole
// handshake. On failure, the stream should be closed.
Status AuthenticateClient(FrameStream& stream, const ClusterKey& key,
                          std::chrono::milliseconds timeout);
// Runs the server side over `stream`; `timeout` bounds the whole handshake, so a silent or slow
// client is refused ("timeout: ..."). A refused client is sent the failure reply first.
Status AuthenticateServer(FrameStream& stream, const ClusterKey& key, NonceCache& nonces,
                          std::chrono::milliseconds timeout);

// 64 lowercase hex digits from the system CSPRNG: a worker's token, and the token that admits
// a data-plane connection of one job attempt (drawn afresh for each attempt, never derived).
std::string RandomToken();
// Constant-time comparison (only the lengths, which are not secret, may end it early).
bool TokensEqual(std::string_view a, std::string_view b);

}  // namespace dtrain::net
