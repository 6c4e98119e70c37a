#include "core/net/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <system_error>
#include <utility>

#include "core/codec/bytes.h"
#include "core/duration_text.h"
#include "core/unique_fd.h"

namespace dtrain::net {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;
using Nonce = std::array<std::uint8_t, kNonceBytes>;
using Mac = std::array<std::uint8_t, crypto_auth_hmacsha256_BYTES>;
static_assert(kClusterKeyBytes == crypto_auth_hmacsha256_KEYBYTES);
static_assert(crypto_generichash_BYTES_MIN <= kClusterKeyBytes &&
              kClusterKeyBytes <= crypto_generichash_BYTES_MAX);

constexpr std::string_view kKeyLabel = "dtrain cluster key v1\n";
constexpr std::string_view kServerLabel = "dtrain auth v1 server";
constexpr std::string_view kClientLabel = "dtrain auth v1 client";
// Handshake messages are small; anything longer is not one (and costs nothing to parse).
constexpr std::size_t kMaxMessage = 4096;
// How much of a peer's own text (an error, a type) goes into our messages.
constexpr std::size_t kMaxEcho = 200;

void EnsureSodium() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (sodium_init() < 0) {
      std::fputs("dtrain: libsodium could not be initialised\n", stderr);
      std::abort();
    }
  });
}

std::string SystemError(int error_number) {
  return std::error_code(error_number, std::system_category()).message();
}

std::string Hex(std::span<const std::uint8_t> bytes) {
  std::string text(bytes.size() * 2 + 1, '\0');
  sodium_bin2hex(text.data(), text.size(), bytes.data(), bytes.size());
  text.pop_back();  // the terminating NUL
  return text;
}

// Exactly 2 * out.size() hex digits, nothing else.
bool FromHex(std::string_view hex, std::span<std::uint8_t> out) {
  if (hex.size() != 2 * out.size()) return false;
  std::size_t bin_len = 0;
  const char* end = nullptr;
  if (sodium_hex2bin(out.data(), out.size(), hex.data(), hex.size(), nullptr, &bin_len, &end) !=
      0) {
    return false;
  }
  return bin_len == out.size() && end == hex.data() + hex.size();
}

// HMAC-SHA256(key, parts...), parts concatenated.
Mac Hmac(std::span<const std::uint8_t, kClusterKeyBytes> key,
         std::initializer_list<std::span<const std::uint8_t>> parts) {
  EnsureSodium();
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, key.data(), key.size());
  for (std::span<const std::uint8_t> p : parts) {
    crypto_auth_hmacsha256_update(&state, p.data(), p.size());
  }
  Mac mac;
  crypto_auth_hmacsha256_final(&state, mac.data());
  sodium_memzero(&state, sizeof state);
  return mac;
}

std::span<const std::uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// label || u16 version || first nonce || second nonce: the server signs (client, server) nonces,
// the client (server, client), each under its own label, so no proof can be reflected.
Mac HandshakeProof(std::span<const std::uint8_t, kClusterKeyBytes> key, std::string_view label,
                   std::uint16_t version, const Nonce& first, const Nonce& second) {
  std::uint8_t v[2];
  codec::StoreLittle(v, version, 2);
  return Hmac(key, {Bytes(label), std::span<const std::uint8_t>(v), first, second});
}

bool MacEqual(const Mac& a, const Mac& b) {
  return sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string Truncated(std::string_view text) {
  if (text.size() <= kMaxEcho) return std::string(text);
  return std::string(text.substr(0, kMaxEcho)) + "...";
}

std::string Dump(const OrderedJson& j) {
  // Replace, never throw on, invalid UTF-8 (a peer's truncated text may contain some).
  return j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

// A handshake message: a JSON object with "v": 1 and a string "type". Fills `why` otherwise.
std::optional<Json> ParseMessage(std::string_view text, std::string& why) {
  if (text.size() > kMaxMessage) {
    why = std::to_string(text.size()) + " bytes, longer than any handshake message";
    return std::nullopt;
  }
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    why = "not a JSON object";
    return std::nullopt;
  }
  const auto v = j.find("v");
  if (v == j.end() || !v->is_number_integer() || v->get<std::int64_t>() != 1) {
    why = "\"v\" is not 1";
    return std::nullopt;
  }
  return j;
}

const std::string* StringField(const Json& j, const char* name) {
  const auto it = j.find(name);
  if (it == j.end() || !it->is_string()) return nullptr;
  return it->get_ptr<const std::string*>();
}

std::string TypeOf(const Json& j) {
  const std::string* type = StringField(j, "type");
  return type ? *type : std::string();
}

// The "ok": false reply's text, "ERROR (code CODE)".
std::string RefusalText(const Json& j) {
  const std::string* error = StringField(j, "error");
  const std::string* code = StringField(j, "code");
  std::string text = error ? Truncated(*error) : std::string("no reason given");
  if (code) text += " (code " + Truncated(*code) + ")";
  return text;
}

// A hex field of exactly out.size() bytes.
bool HexField(const Json& j, const char* name, std::span<std::uint8_t> out) {
  const std::string* text = StringField(j, name);
  return text != nullptr && FromHex(*text, out);
}

milliseconds Remaining(Clock::time_point deadline) {
  return std::max(std::chrono::ceil<milliseconds>(deadline - Clock::now()), milliseconds(0));
}

std::string_view TrimTrailingSpace(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' ||
                        s.back() == '\n' || s.back() == '\v' || s.back() == '\f')) {
    s.remove_suffix(1);
  }
  return s;
}

std::string FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a plain file";
}

std::string Octal(mode_t mode) {
  char text[16];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode));
  return text;
}

}  // namespace

// --- ClusterKey -------------------------------------------------------------------------------

ClusterKey ClusterKey::FromContent(std::string_view content) {
  EnsureSodium();
  const std::string_view trimmed = TrimTrailingSpace(content);
  ClusterKey key;
  crypto_generichash_state state;
  crypto_generichash_init(&state, nullptr, 0, key.bytes_.size());
  crypto_generichash_update(&state, Bytes(kKeyLabel).data(), kKeyLabel.size());
  crypto_generichash_update(&state, Bytes(trimmed).data(), trimmed.size());
  crypto_generichash_final(&state, key.bytes_.data(), key.bytes_.size());
  sodium_memzero(&state, sizeof state);
  return key;
}

ClusterKey::~ClusterKey() { sodium_memzero(bytes_.data(), bytes_.size()); }

bool ClusterKey::Matches(std::string_view content) const {
  const ClusterKey other = FromContent(content);
  return sodium_memcmp(other.bytes_.data(), bytes_.data(), bytes_.size()) == 0;
}

Result<ClusterKey> LoadClusterKey(const std::string& path) {
  const auto error = [&](const std::string& what) {
    return Status::Error("cluster key file " + path + ": " + what);
  };
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return error("cannot open: " + SystemError(errno));
  const UniqueFd closer(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return error("cannot stat: " + SystemError(errno));
  if (!S_ISREG(st.st_mode)) return error("not a regular file (" + FileKind(st.st_mode) + ")");
  const mode_t perm = st.st_mode & 07777;
  if ((perm & 077) != 0) {
    const char* what = (perm & 044) ? "readable" : (perm & 022) ? "writable" : "accessible";
    return error("mode " + Octal(perm) + ": the key file must not be " + what +
                 " by group or others (chmod 600)");
  }

  std::string content(kMaxKeyFile + 1, '\0');
  std::size_t got = 0;
  while (got < content.size()) {
    const ssize_t n = ::read(fd, content.data() + got, content.size() - got);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      sodium_memzero(content.data(), content.size());
      return error("cannot read: " + SystemError(e));
    }
    got += static_cast<std::size_t>(n);
  }
  const std::size_t size = TrimTrailingSpace(std::string_view(content.data(), got)).size();
  Result<ClusterKey> result = [&]() -> Result<ClusterKey> {
    if (got > kMaxKeyFile) {
      return error("larger than " + std::to_string(kMaxKeyFile) + " bytes: not a key file");
    }
    if (size < kMinKeyFileContent) {
      return error("only " + std::to_string(size) + " bytes of key; a key file holds at least " +
                   std::to_string(kMinKeyFileContent) + " (make a new one with 64 random hex " +
                   "digits)");
    }
    return ClusterKey::FromContent(std::string_view(content.data(), got));
  }();
  sodium_memzero(content.data(), content.size());
  return result;
}

Status WriteNewKeyFile(const std::string& path) {
  EnsureSodium();
  // O_EXCL: never overwrite, and never follow a symlink planted at `path`.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    if (errno == EEXIST) {
      return Status::Error("cluster key file " + path +
                           " already exists; refusing to overwrite it");
    }
    return Status::Error("cannot create cluster key file " + path + ": " + SystemError(errno));
  }
  UniqueFd closer(fd);
  const auto fail = [&](const std::string& what, int error_number) {
    ::unlink(path.c_str());
    return Status::Error("cannot write cluster key file " + path + ": " + what + ": " +
                         SystemError(error_number));
  };
  // The umask may have taken bits away from 0600; it never adds any.
  if (::fchmod(fd, 0600) != 0) return fail("chmod", errno);

  std::array<std::uint8_t, 32> secret;
  randombytes_buf(secret.data(), secret.size());
  std::string line = Hex(secret) + "\n";
  sodium_memzero(secret.data(), secret.size());
  std::size_t written = 0;
  int write_error = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(fd, line.data() + written, line.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      write_error = errno;
      break;
    }
    written += static_cast<std::size_t>(n);
  }
  sodium_memzero(line.data(), line.size());
  if (write_error != 0) return fail("write", write_error);
  if (::fsync(fd) != 0) return fail("fsync", errno);
  // Closed here, not by its owner: a write the kernel reports only at close fails the file.
  if (::close(closer.release()) != 0) return fail("close", errno);
  return Status::Ok();
}

// --- NonceCache -------------------------------------------------------------------------------

NonceCache::NonceCache(std::size_t capacity) : capacity_(std::max<std::size_t>(capacity, 1)) {}

bool NonceCache::Insert(std::span<const std::uint8_t, kNonceBytes> nonce) {
  Nonce n;
  std::copy(nonce.begin(), nonce.end(), n.begin());
  std::lock_guard lock(mu_);
  if (!seen_.insert(n).second) return false;
  order_.push_back(n);
  if (order_.size() > capacity_) {
    seen_.erase(order_.front());
    order_.pop_front();
  }
  return true;
}

std::size_t NonceCache::size() const {
  std::lock_guard lock(mu_);
  return order_.size();
}

// --- ServerHandshake --------------------------------------------------------------------------

ServerHandshake::ServerHandshake(const ClusterKey& key, NonceCache& nonces, std::string peer,
                                 milliseconds max_age)
    : nonces_(&nonces), peer_(std::move(peer)), max_age_(max_age) {
  EnsureSodium();
  std::copy(key.bytes().begin(), key.bytes().end(), key_.begin());
}

ServerHandshake::~ServerHandshake() { sodium_memzero(key_.data(), key_.size()); }

Status ServerHandshake::Fail(std::string code, std::string message) {
  state_ = State::kFailed;
  failure_code_ = std::move(code);
  failure_text_ = std::move(message);
  return Status::Error("authentication of " + peer_ + " failed: " + failure_text_);
}

Result<std::string> ServerHandshake::OnHello(std::string_view hello_json) {
  if (state_ != State::kAwaitHello) {
    return Fail("bad_request", "unexpected auth_hello: the handshake is past that step");
  }
  std::string why;
  const std::optional<Json> hello = ParseMessage(hello_json, why);
  if (!hello) return Fail("bad_request", "malformed auth_hello: " + why);
  if (const std::string type = TypeOf(*hello); type != "auth_hello") {
    return Fail("bad_request", "expected auth_hello, got \"" + Truncated(type) + "\"");
  }
  const auto protocol = hello->find("protocol");
  if (protocol == hello->end() || !protocol->is_number_integer()) {
    return Fail("bad_request", "malformed auth_hello: \"protocol\" is not an integer");
  }
  if (protocol->get<std::int64_t>() != kProtocolVersion) {
    return Fail("protocol", "protocol version mismatch: the client speaks version " +
                                protocol->dump() + ", this daemon speaks version " +
                                std::to_string(kProtocolVersion));
  }
  if (!HexField(*hello, "nonce", client_nonce_)) {
    return Fail("bad_request", "malformed auth_hello: \"nonce\" is not " +
                                   std::to_string(2 * kNonceBytes) + " hex digits");
  }
  if (!nonces_->Insert(client_nonce_)) {
    return Fail("replay", "replayed auth_hello: its nonce was used before");
  }
  randombytes_buf(server_nonce_.data(), server_nonce_.size());
  const Mac proof =
      HandshakeProof(key_, kServerLabel, kProtocolVersion, client_nonce_, server_nonce_);
  state_ = State::kAwaitProof;
  challenged_at_ = Clock::now();
  return Dump({{"v", 1},
               {"ok", true},
               {"type", "auth_challenge"},
               {"nonce", Hex(server_nonce_)},
               {"proof", Hex(proof)}});
}

Status ServerHandshake::OnProof(std::string_view proof_json) {
  if (state_ != State::kAwaitProof) {
    return Fail("bad_request", state_ == State::kAwaitHello
                                   ? "auth_proof before auth_hello"
                                   : "unexpected auth_proof: the handshake is past that step");
  }
  const auto age = std::chrono::duration_cast<milliseconds>(Clock::now() - challenged_at_);
  if (age > max_age_) {
    return Fail("stale", "stale handshake: the proof came " + Ms(age) +
                             " after the challenge, later than " + Ms(max_age_));
  }
  std::string why;
  const std::optional<Json> message = ParseMessage(proof_json, why);
  if (!message) return Fail("bad_request", "malformed auth_proof: " + why);
  const std::string type = TypeOf(*message);
  if (type == "auth_abort") {
    const std::string* error = StringField(*message, "error");
    return Fail("aborted",
                "the client gave up: " + (error ? Truncated(*error) : std::string("no reason")));
  }
  if (type != "auth_proof") {
    return Fail("bad_request", "expected auth_proof, got \"" + Truncated(type) + "\"");
  }
  Mac got;
  if (!HexField(*message, "proof", got)) {
    return Fail("bad_request", "malformed auth_proof: \"proof\" is not " +
                                   std::to_string(2 * got.size()) + " hex digits");
  }
  const Mac want =
      HandshakeProof(key_, kClientLabel, kProtocolVersion, server_nonce_, client_nonce_);
  if (!MacEqual(got, want)) {
    return Fail("denied", "the proof does not match this cluster's key");
  }
  state_ = State::kDone;
  return Status::Ok();
}

std::string ServerHandshake::OkReply() {
  return Dump({{"v", 1}, {"ok", true}, {"type", "auth_ok"}});
}

std::string ServerHandshake::FailureReply() const {
  return Dump(
      {{"v", 1},
       {"ok", false},
       {"code", failure_code_.empty() ? std::string("denied") : failure_code_},
       {"error", failure_text_.empty() ? std::string("authentication failed") : failure_text_}});
}

// --- ClientHandshake --------------------------------------------------------------------------

ClientHandshake::ClientHandshake(const ClusterKey& key, std::string peer) : peer_(std::move(peer)) {
  EnsureSodium();
  std::copy(key.bytes().begin(), key.bytes().end(), key_.begin());
  randombytes_buf(client_nonce_.data(), client_nonce_.size());
}

ClientHandshake::~ClientHandshake() { sodium_memzero(key_.data(), key_.size()); }

Status ClientHandshake::Fail(std::string message) {
  state_ = State::kFailed;
  if (abort_reason_.empty()) abort_reason_ = message;
  return Status::Error(std::move(message));
}

std::string ClientHandshake::Hello() const {
  return Dump({{"v", 1},
               {"type", "auth_hello"},
               {"nonce", Hex(client_nonce_)},
               {"protocol", kProtocolVersion}});
}

Result<std::string> ClientHandshake::OnChallenge(std::string_view challenge_json) {
  if (state_ != State::kAwaitChallenge) {
    return Fail("authentication with " + peer_ + ": unexpected challenge");
  }
  std::string why;
  const std::optional<Json> reply = ParseMessage(challenge_json, why);
  if (!reply) {
    return Fail("authentication with " + peer_ + " failed: malformed reply to auth_hello: " + why);
  }
  const auto ok = reply->find("ok");
  if (ok != reply->end() && ok->is_boolean() && !ok->get<bool>()) {
    return Fail("authentication refused by " + peer_ + ": " + RefusalText(*reply));
  }
  if (TypeOf(*reply) != "auth_challenge") {
    return Fail("authentication with " + peer_ + " failed: expected auth_challenge, got \"" +
                Truncated(TypeOf(*reply)) + "\"");
  }
  Nonce server_nonce;
  Mac server_proof;
  if (!HexField(*reply, "nonce", server_nonce) || !HexField(*reply, "proof", server_proof)) {
    return Fail("authentication with " + peer_ +
                " failed: malformed auth_challenge: \"nonce\" and \"proof\" must be " +
                std::to_string(2 * kNonceBytes) + " hex digits");
  }
  const Mac want =
      HandshakeProof(key_, kServerLabel, kProtocolVersion, client_nonce_, server_nonce);
  if (!MacEqual(server_proof, want)) {
    abort_reason_ = "the server's proof does not match this client's cluster key";
    return Fail("the daemon at " + peer_ +
                " could not prove it holds the cluster key (its key differs from ours)");
  }
  const Mac proof =
      HandshakeProof(key_, kClientLabel, kProtocolVersion, server_nonce, client_nonce_);
  state_ = State::kAwaitResult;
  return Dump({{"v", 1}, {"type", "auth_proof"}, {"proof", Hex(proof)}});
}

Status ClientHandshake::OnResult(std::string_view result_json) {
  if (state_ != State::kAwaitResult) {
    return Fail("authentication with " + peer_ + ": unexpected result before the challenge");
  }
  std::string why;
  const std::optional<Json> reply = ParseMessage(result_json, why);
  if (!reply) {
    return Fail("authentication with " + peer_ + " failed: malformed reply to auth_proof: " + why);
  }
  const auto ok = reply->find("ok");
  if (ok != reply->end() && ok->is_boolean() && !ok->get<bool>()) {
    return Fail("authentication refused by " + peer_ + ": " + RefusalText(*reply));
  }
  if (TypeOf(*reply) != "auth_ok" || ok == reply->end() || !ok->is_boolean()) {
    return Fail("authentication with " + peer_ + " failed: expected auth_ok, got \"" +
                Truncated(TypeOf(*reply)) + "\"");
  }
  state_ = State::kDone;
  return Status::Ok();
}

std::string ClientHandshake::AbortMessage() const {
  return Dump({{"v", 1},
               {"type", "auth_abort"},
               {"error", abort_reason_.empty() ? std::string("the client gave up")
                                               : Truncated(abort_reason_)}});
}

// --- Blocking drivers -------------------------------------------------------------------------

namespace {

// One kControl frame's payload, by the handshake's deadline. `step` names what is awaited.
Result<std::string> ReadStep(FrameStream& stream, Clock::time_point deadline, milliseconds timeout,
                             std::string_view step, std::string_view failed) {
  Result<Frame> frame = stream.Read(Remaining(deadline));
  if (!frame.ok()) {
    if (frame.status().code() == StatusCode::kTimeout) {
      return Status::Error(std::string(failed) + ": timeout: no " + std::string(step) + " from " +
                           stream.peer() + " within the handshake's " + Ms(timeout));
    }
    return Status::Error(std::string(failed) + " waiting for the " + std::string(step) + ": " +
                         frame.status().message());
  }
  if (frame.value().header.type != MessageType::kControl) {
    return Status::Error(std::string(failed) + ": expected the " + std::string(step) +
                         " in a control frame, got a " +
                         std::string(MessageTypeName(frame.value().header.type)) + " frame");
  }
  return std::move(frame).value().payload;
}

Status WriteStep(FrameStream& stream, Clock::time_point deadline, std::string_view payload,
                 std::string_view step, std::string_view failed) {
  Status s = stream.WriteString(MessageType::kControl, 0, 0, payload, Remaining(deadline));
  if (!s.ok()) {
    return Status::Error(std::string(failed) + " sending the " + std::string(step) + ": " +
                         s.message());
  }
  return s;
}

}  // namespace

Status AuthenticateClient(FrameStream& stream, const ClusterKey& key, milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + std::max(timeout, milliseconds(0));
  const std::string failed = "authentication with " + stream.peer() + " failed";
  ClientHandshake hs(key, stream.peer());
  if (Status s = WriteStep(stream, deadline, hs.Hello(), "auth_hello", failed); !s.ok()) return s;
  Result<std::string> challenge = ReadStep(stream, deadline, timeout, "auth_challenge", failed);
  if (!challenge.ok()) return challenge.status();
  Result<std::string> proof = hs.OnChallenge(challenge.value());
  if (!proof.ok()) {
    // Best effort: tell the daemon why before the caller closes the connection.
    (void)stream.WriteString(MessageType::kControl, 0, 0, hs.AbortMessage(), Remaining(deadline));
    return proof.status();
  }
  if (Status s = WriteStep(stream, deadline, proof.value(), "auth_proof", failed); !s.ok())
    return s;
  Result<std::string> result = ReadStep(stream, deadline, timeout, "auth_ok", failed);
  if (!result.ok()) return result.status();
  return hs.OnResult(result.value());
}

Status AuthenticateServer(FrameStream& stream, const ClusterKey& key, NonceCache& nonces,
                          milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + std::max(timeout, milliseconds(0));
  const std::string failed = "authentication of " + stream.peer() + " failed";
  ServerHandshake hs(key, nonces, stream.peer(), timeout);
  const auto refuse = [&](const Status& why) {
    // Best effort: the client learns why before the caller closes the connection.
    (void)stream.WriteString(MessageType::kControl, 0, 0, hs.FailureReply(), Remaining(deadline));
    return why;
  };
  Result<std::string> hello = ReadStep(stream, deadline, timeout, "auth_hello", failed);
  if (!hello.ok()) return hello.status();
  Result<std::string> challenge = hs.OnHello(hello.value());
  if (!challenge.ok()) return refuse(challenge.status());
  if (Status s = WriteStep(stream, deadline, challenge.value(), "auth_challenge", failed);
      !s.ok()) {
    return s;
  }
  Result<std::string> proof = ReadStep(stream, deadline, timeout, "auth_proof", failed);
  if (!proof.ok()) return proof.status();
  if (Status s = hs.OnProof(proof.value()); !s.ok()) return refuse(s);
  return WriteStep(stream, deadline, ServerHandshake::OkReply(), "auth_ok", failed);
}

// --- Data-plane tokens ------------------------------------------------------------------------

std::string RandomToken() {
  EnsureSodium();
  std::array<std::uint8_t, 32> bytes;
  randombytes_buf(bytes.data(), bytes.size());
  return Hex(bytes);
}

bool TokensEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  EnsureSodium();
  return sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace dtrain::net
