#include "cmd/daemon_client.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cmd/interrupt.h"
#include "cmd/json_fields.h"
#include "core/net/auth.h"
#include "core/net/host_info.h"

namespace dtrain::cli {
namespace {

// Replies may carry a checkpoint blob; the stream grows its buffer only as bytes arrive.
constexpr std::uint32_t kMaxReplyPayload = 1u << 30;
// The slice in which a patient read checks for Ctrl-C.
constexpr int kPollSliceMs = 200;

std::string EnvOrEmpty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// Why `path` cannot be a daemon's socket, or nullopt when a socket file is there.
std::optional<std::string> NotASocket(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? std::string("no such file") : std::string(std::strerror(errno));
  }
  if (!S_ISSOCK(st.st_mode)) return std::string("not a socket");
  return std::nullopt;
}

std::string HowToStart(const std::string& socket) {
  return "\n  start one:   dtraind --socket " + socket +
         " --state-dir DIR &   (or, for the system daemon: systemctl start dtraind)"
         "\n  or, without a daemon: dtrain run JOB_FILE, and --db PATH for list, status, logs,"
         " metrics, checkpoints and export";
}

// The exit code for a daemon error code: not_found 4, invalid_job and bad_request 2, others 1.
int ExitCodeForReply(const std::string& code) {
  if (code == "not_found") return kExitNotFound;
  if (code == "invalid_job" || code == "bad_request") return kExitUsage;
  return kExitFailed;
}

// The connection failed or the daemon broke the protocol. Messages name the daemon (the
// stream's peer name is "the daemon at PATH").
CliError Lost(std::string message) {
  return CliError{kExitUnreachable, std::move(message), "unreachable", {}};
}

std::vector<config::Diagnostic> ParseDiagnostics(const nlohmann::json& reply) {
  std::vector<config::Diagnostic> out;
  for (const nlohmann::json& d : JsonArray(reply, "diagnostics")) {
    out.push_back({JsonString(d, "file"), static_cast<int>(JsonInt(d, "line")),
                   static_cast<int>(JsonInt(d, "column")), JsonString(d, "key"),
                   JsonString(d, "message")});
  }
  return out;
}

}  // namespace

std::string UserSocketPath() {
  const std::string runtime = EnvOrEmpty("XDG_RUNTIME_DIR");
  if (!runtime.empty()) return runtime + "/dtrain/dtraind.sock";
  return "/tmp/dtrain-" + std::to_string(::getuid()) + "/dtraind.sock";
}

SocketSearch FindSockets(const std::string& socket_flag) {
  if (!socket_flag.empty()) return {{socket_flag}, "--socket"};
  const std::string env = EnvOrEmpty("DTRAIN_SOCKET");
  if (!env.empty()) return {{env}, "DTRAIN_SOCKET"};
  return {{UserSocketPath(), kSystemSocket}, ""};
}

DaemonClient::DaemonClient(net::FrameStream stream, std::string path, bool tcp)
    : stream_(std::move(stream)), path_(std::move(path)), tcp_(tcp) {}

CliResult<DaemonClient> DaemonClient::Connect(const GlobalOptions& globals) {
  const std::string host = !globals.host.empty() ? globals.host : EnvOrEmpty("DTRAIN_HOST");
  if (host.empty()) return Connect(FindSockets(globals.socket));
  const std::string key_file =
      !globals.key_file.empty() ? globals.key_file : EnvOrEmpty("DTRAIN_KEY_FILE");
  return ConnectHost(host, key_file);
}

CliResult<DaemonClient> DaemonClient::ConnectHost(const std::string& host,
                                                  const std::string& key_file) {
  const std::optional<net::HostPort> target = net::SplitHostPort(host);
  if (!target) {
    return CliError{kExitUsage,
                    "--host (or DTRAIN_HOST) must be HOST:PORT, such as 10.0.0.2:7070 or "
                    "[::1]:7070, got '" + host + "'",
                    "usage",
                    {}};
  }
  std::optional<net::ClusterKey> key;
  if (!key_file.empty()) {
    Result<net::ClusterKey> loaded = net::LoadClusterKey(key_file);
    if (!loaded.ok()) return CliError{kExitUsage, loaded.status().message(), "usage", {}};
    key = std::move(loaded).value();
  }
  auto stream =
      net::FrameStream::ConnectTcp(target->host, target->port, kConnectTimeout, kMaxReplyPayload);
  if (!stream.ok()) {
    return Lost("no dtrain daemon is reachable at " + host + ": " + stream.status().message());
  }
  stream.value().set_peer_name(host);  // the handshake's messages say "the daemon at HOST"
  if (key) {
    if (Status auth = net::AuthenticateClient(stream.value(), *key, kConnectTimeout); !auth.ok()) {
      return CliError{kExitFailed, auth.message(), "denied", {}};
    }
  }
  stream.value().set_peer_name("the daemon at " + host);
  return DaemonClient(std::move(stream).value(), host, true);
}

CliResult<DaemonClient> DaemonClient::Connect(const SocketSearch& search) {
  const bool given = !search.given_by.empty();
  std::string tried;
  for (const std::string& path : search.paths) {
    std::optional<std::string> why = NotASocket(path);
    if (!why) {
      auto stream = net::FrameStream::ConnectUnix(path, kConnectTimeout, kMaxReplyPayload);
      if (stream.ok()) {
        stream.value().set_peer_name("the daemon at " + path);
        return DaemonClient(std::move(stream).value(), path, false);
      }
      why = stream.status().message();
    }
    tried += "\n  " + path + (given ? " (from " + search.given_by + ")" : "") + ": " + *why;
  }
  return CliError{kExitUnreachable,
                  "no dtrain daemon is reachable; tried:" + tried +
                      HowToStart(given ? search.paths.front() : UserSocketPath()),
                  "unreachable",
                  {}};
}

std::optional<CliError> DaemonClient::Send(nlohmann::json request) {
  request["v"] = 1;
  if (tcp_) request["uid"] = ::getuid();
  const Status sent =
      stream_.WriteString(net::MessageType::kControl, 0, 0, request.dump(), kRequestTimeout);
  if (sent.ok()) return std::nullopt;
  // A daemon that closed the connection at once (over its connection caps) said why first.
  if (Result<net::Frame> why = stream_.Read(kConnectTimeout); why.ok()) {
    CliResult<nlohmann::json> refusal = ParseMessage(why.value());
    if (!refusal.ok()) return refusal.error();
  }
  return Lost(sent.message());
}

CliResult<nlohmann::json> DaemonClient::Request(nlohmann::json request, Patience patience) {
  const std::string type = JsonString(request, "type");
  if (std::optional<CliError> failed = Send(std::move(request))) return *failed;
  CliResult<net::Frame> frame = ReadFrame(patience);
  if (!frame.ok()) return frame.error();
  CliResult<nlohmann::json> reply = ParseMessage(frame.value());
  if (!reply.ok()) return reply;
  const nlohmann::json* ok = JsonField(reply.value(), "ok");
  if (ok == nullptr || !ok->is_boolean()) {
    return Lost(stream_.peer() + " sent a reply to '" + type + "' without \"ok\"");
  }
  return reply;
}

CliResult<nlohmann::json> DaemonClient::ReadStreamFrame(Patience patience) {
  CliResult<net::Frame> frame = ReadFrame(patience);
  if (!frame.ok()) return frame.error();
  return ParseMessage(frame.value());
}

CliResult<std::string> DaemonClient::ReadCheckpointBlob() {
  CliResult<net::Frame> frame = ReadFrame(Patience::kRequest);
  if (!frame.ok()) return frame.error();
  if (frame.value().header.type == net::MessageType::kCheckpoint) {
    return std::move(frame.value().payload);
  }
  CliResult<nlohmann::json> message = ParseMessage(frame.value());
  if (!message.ok()) return message.error();
  return Lost(stream_.peer() + " sent a control frame where the checkpoint was expected");
}

CliResult<net::Frame> DaemonClient::ReadFrame(Patience patience) {
  if (patience == Patience::kUntilEnd) {
    pollfd ready{stream_.fd(), POLLIN, 0};
    for (;;) {
      const int n = ::poll(&ready, 1, kPollSliceMs);
      if (n > 0) break;
      if (n < 0 && errno != EINTR) {
        return Lost("waiting for " + stream_.peer() + ": " + std::strerror(errno));
      }
      if (StopRequested()) return CliError{kExitInterrupted, "interrupted", "interrupted", {}};
    }
  }
  Result<net::Frame> frame = stream_.Read(kRequestTimeout);
  if (!frame.ok()) return Lost(frame.status().message());
  if (frame.value().header.type == net::MessageType::kVersionMismatch) {
    return Lost(stream_.peer() + " speaks another protocol version: " + frame.value().payload);
  }
  return std::move(frame).value();
}

CliResult<nlohmann::json> DaemonClient::ParseMessage(const net::Frame& frame) const {
  if (frame.header.type != net::MessageType::kControl) {
    return Lost(stream_.peer() + " sent an unexpected " +
                std::string(net::MessageTypeName(frame.header.type)) + " frame");
  }
  nlohmann::json message = nlohmann::json::parse(frame.payload, nullptr, false);
  if (!message.is_object()) return Lost(stream_.peer() + " sent a reply that is not a JSON object");
  const nlohmann::json* ok = JsonField(message, "ok");
  if (ok != nullptr && ok->is_boolean() && !ok->get<bool>()) {
    const std::string code = JsonString(message, "code");
    std::string text = JsonString(message, "error");
    if (text.empty()) text = "the daemon refused the request (" + code + ")";
    return CliError{ExitCodeForReply(code), text, code, ParseDiagnostics(message)};
  }
  return message;
}

}  // namespace dtrain::cli
