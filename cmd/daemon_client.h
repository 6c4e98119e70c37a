// DaemonClient: the CLI's connection to its daemon's control socket (daemon/control_protocol.md):
// which socket, connecting, one request and its reply, the frames of a `logs` stream, and the
// checkpoint blob that follows a `checkpoint` reply.
//
//   CliResult<DaemonClient> client = DaemonClient::Connect(*globals);
//   if (!client.ok()) return Report(client.error());           // exit 3, says how to start one
//   CliResult<nlohmann::json> reply = client.value().Request({{"type", "status"}, {"id", 3}});
//   if (!reply.ok()) return Report(reply.error());              // e.g. not_found -> exit 4
//
// Which daemon: --host HOST:PORT, else $DTRAIN_HOST: that daemon's TCP listener, authenticated
// with the cluster key of --key-file or $DTRAIN_KEY_FILE when one is given (core/net/auth.md; a
// daemon without a key answers queries only, and one with a key refuses a client without it).
// Over TCP every request names the uid it acts for (this process's real uid).
// Otherwise a Unix socket: --socket PATH, else $DTRAIN_SOCKET (each used as given), else the
// first of the user socket ($XDG_RUNTIME_DIR/dtrain/dtraind.sock, or
// /tmp/dtrain-UID/dtraind.sock without XDG_RUNTIME_DIR) and the system socket
// (/run/dtrain/dtraind.sock) that accepts a connection.
//
// Every read has a deadline: kRequestTimeout for a reply; with Patience::kUntilEnd (wait, logs
// -f) the wait for a frame's first byte is unbounded but ends on Ctrl-C (interrupt.h, exit 130),
// and the frame itself still has kRequestTimeout. A daemon that cannot be reached, goes away or
// answers garbage is an error with exit code kExitUnreachable naming the socket; an error reply
// keeps its "code" (mapped to an exit code), "error" and "diagnostics".
//
// One thread at a time; movable.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "core/net/frame_stream.h"

namespace dtrain::cli {

inline constexpr const char* kSystemSocket = "/run/dtrain/dtraind.sock";

// $XDG_RUNTIME_DIR/dtrain/dtraind.sock, or /tmp/dtrain-UID/dtraind.sock.
std::string UserSocketPath();

struct SocketSearch {
  std::vector<std::string> paths;  // tried in order
  std::string given_by;            // "--socket" or "DTRAIN_SOCKET"; empty: the default sockets
};

// The sockets to try: `socket_flag` when not empty, else $DTRAIN_SOCKET when set and not
// empty, else the user and the system socket.
SocketSearch FindSockets(const std::string& socket_flag);

// How long a read may wait for the first byte of a frame.
enum class Patience {
  kRequest,   // kRequestTimeout
  kUntilEnd,  // until the frame comes, the daemon goes away or the user presses Ctrl-C
};

class DaemonClient {
 public:
  static constexpr std::chrono::seconds kRequestTimeout{30};
  static constexpr std::chrono::seconds kConnectTimeout{5};

  // The daemon the global options name (see above).
  static CliResult<DaemonClient> Connect(const GlobalOptions& globals);
  // Connects to the first socket of `search` that accepts; otherwise one error listing every
  // socket tried and why, and how to start a daemon (exit code kExitUnreachable).
  static CliResult<DaemonClient> Connect(const SocketSearch& search);
  // A daemon's TCP listener at "HOST:PORT"; with a `key_file`, authenticated. A bad address or
  // key file is kExitUsage, a refused handshake kExitFailed, no answer kExitUnreachable.
  static CliResult<DaemonClient> ConnectHost(const std::string& host, const std::string& key_file);

  // Sends `request` ("v": 1 added) and returns the reply object once its "ok" is true.
  CliResult<nlohmann::json> Request(nlohmann::json request, Patience patience = Patience::kRequest);
  // Sends `request` ("v": 1 added) without reading anything: the start of a stream (`logs`).
  std::optional<CliError> Send(nlohmann::json request);
  // The next object of a stream: {"lines": [...]}, or {"end": true, "job": JOB}; an error reply
  // in its place becomes the error.
  CliResult<nlohmann::json> ReadStreamFrame(Patience patience);
  // The checkpoint frame that follows a successful `checkpoint` reply: the encoded blob.
  CliResult<std::string> ReadCheckpointBlob();

  // The socket (or "HOST:PORT") this client is connected to.
  const std::string& socket_path() const { return path_; }

 private:
  DaemonClient(net::FrameStream stream, std::string path, bool tcp);

  CliResult<net::Frame> ReadFrame(Patience patience);
  // Parses a control frame's JSON object; an error reply ("ok": false) becomes the error.
  CliResult<nlohmann::json> ParseMessage(const net::Frame& frame) const;

  net::FrameStream stream_;
  std::string path_;
  bool tcp_ = false;  // requests name their uid
};

}  // namespace dtrain::cli
