#include "daemon/server/control_server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/steady_timer.hpp>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>
#include <unordered_map>

#include "core/net/host_info.h"
#include "daemon/server/async.h"
#include "daemon/server/client_requests.h"
#include "daemon/server/connection_gate.h"
#include "daemon/server/control_caller.h"
#include "daemon/server/control_context.h"
#include "daemon/server/control_request.h"
#include "daemon/server/local_peer.h"
#include "daemon/server/peer_hosting.h"
#include "daemon/server/request_table.h"
#include "daemon/server/worker_channel.h"

namespace dtrain::server {
namespace {

using json = nlohmann::json;

constexpr std::uint32_t kMaxClientPayload = 16u << 20;

}  // namespace

struct ControlServer::Impl {
  Impl(asio::io_context& io_context, asio::thread_pool& blocking, store::Store& run_store,
       JobManager& manager, std::string path, unsigned mode, ClusterSide cluster_side,
       const ListenerCaps& caps)
      : ctx{io_context, blocking, run_store, manager, std::move(cluster_side)},
        socket_path(std::move(path)),
        socket_mode(mode),
        unix_gate(caps.unix_socket),
        tcp_gate(caps.tcp),
        acceptor(io_context),
        tcp_acceptor(io_context) {}

  // The server's side of core/net/auth.md, bounded by kHandshakeTimeout; false: the caller
  // failed it (it was told why when it got that far) and the connection must close. A first
  // frame asking for a worker channel instead makes `caller` a Slurm task's channel.
  asio::awaitable<bool> Authenticate(Socket& socket, const std::string& peer, Caller* caller) {
    asio::steady_timer deadline(ctx.io);
    deadline.expires_after(ControlServer::kHandshakeTimeout);
    deadline.async_wait([&socket](const std::error_code& ec) {
      std::error_code ignored;
      if (!ec) socket.close(ignored);  // a stale handshake: the pending read fails
    });
    net::ServerHandshake handshake(*ctx.cluster.key, nonces, peer);
    Result<net::Frame> hello = co_await ReadFrame(socket, kMaxHandshakePayload, nullptr, &preauth);
    if (!hello.ok()) co_return false;
    const json first = json::parse(hello.value().payload, nullptr, false);
    if (first.is_object() && StringField(first, "type").value_or("") == "worker_channel") {
      *caller = Caller::SlurmTaskChannel();
      const json reply_ = Ok();
      co_return co_await WriteJson(socket, reply_);
    }
    if (first.is_object() && StringField(first, "type").value_or("") != "auth_hello") {
      const json refused = Error("denied",
                                 "this daemon requires the cluster key: authenticate first "
                                 "(dtrain --key-file PATH, or DTRAIN_KEY_FILE)");
      co_await WriteJson(socket, refused);
      co_return false;
    }
    Result<std::string> challenge = handshake.OnHello(hello.value().payload);
    const std::string answer = challenge.ok() ? challenge.value() : handshake.FailureReply();
    if (!co_await WriteFrame(socket, net::MessageType::kControl, 0, answer) || !challenge.ok()) {
      co_return false;
    }
    Result<net::Frame> proof = co_await ReadFrame(socket, kMaxHandshakePayload, nullptr, &preauth);
    if (!proof.ok()) co_return false;
    const bool proven = handshake.OnProof(proof.value().payload).ok();
    const std::string verdict =
        proven ? net::ServerHandshake::OkReply() : handshake.FailureReply();
    const bool sent = co_await WriteFrame(socket, net::MessageType::kControl, 0, verdict);
    co_return proven && sent;
  }

  // A connection's life; whatever goes wrong in it (even an exception from a library) closes
  // that connection only.
  // `tcp_peer`: "ADDR:PORT" of a TCP caller; nullopt for the Unix socket. `worker_channel`: a
  // local worker's end of a socket pair. `ticket`: the connection's place under its listener's
  // caps (none for a worker's socket pair).
  asio::awaitable<void> Session(Socket socket, std::optional<std::string> tcp_peer,
                                bool worker_channel,
                                std::optional<ConnectionGate::Ticket> ticket) {
    try {
      co_await Converse(socket, tcp_peer, worker_channel, ticket);
    } catch (const std::exception&) {
    }
  }

  // A connection over its listener's caps: told why in one frame, then closed.
  asio::awaitable<void> Refuse(Socket socket, std::string why) {
    try {
      const json refused = Error("busy", why);
      co_await WriteJson(socket, refused);
    } catch (const std::exception&) {
    }
  }

  // The next request frame of a client: it may keep the connection idle as long as it likes, but
  // once its first byte has come the whole frame must follow within kRequestTimeout, or the
  // connection is closed (a client dribbling a byte a second holds nothing for long). A
  // `stranger` (a key-less TCP client) sends at most kMaxPreAuthPayload, from the pre-auth
  // budget; a Unix-socket client (`uid`) from its uid's kClientBudget; a key holder as it likes.
  asio::awaitable<Result<net::Frame>> ReadRequest(Socket& socket, bool stranger,
                                                  std::optional<uid_t> uid) {
    std::error_code ec;
    co_await socket.async_wait(Socket::wait_read, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return Status::Error(std::string(net::FrameErrorName(net::FrameError::kClosed)));
    asio::steady_timer deadline(ctx.io);
    deadline.expires_after(ControlServer::kRequestTimeout);
    deadline.async_wait([&socket](const std::error_code& expired) {
      std::error_code ignored;
      if (!expired) socket.close(ignored);  // the pending read fails
    });
    ByteBudget* budget = stranger ? &preauth : uid ? &ClientBudget(*uid) : nullptr;
    co_return co_await ReadFrame(socket, stranger ? kMaxPreAuthPayload : kMaxClientPayload,
                                 nullptr, budget);
  }

  ByteBudget& ClientBudget(uid_t uid) {
    return client_budgets.try_emplace(uid, ControlServer::kClientBudget).first->second;
  }

  // The whole next frame within `limit` of now, idle time included, or the connection is closed:
  // for a caller that holds no credential yet (a Slurm task's channel before its hello), so at
  // most kMaxPreAuthPayload, from the pre-auth budget.
  asio::awaitable<Result<net::Frame>> ReadWithin(Socket& socket, std::chrono::seconds limit) {
    asio::steady_timer deadline(ctx.io);
    deadline.expires_after(limit);
    deadline.async_wait([&socket](const std::error_code& expired) {
      std::error_code ignored;
      if (!expired) socket.close(ignored);
    });
    co_return co_await ReadFrame(socket, kMaxPreAuthPayload, nullptr, &preauth);
  }

  asio::awaitable<void> Converse(Socket& socket, const std::optional<std::string>& tcp_peer,
                                 bool worker_channel,
                                 std::optional<ConnectionGate::Ticket>& ticket) {
    Caller caller;  // loopback TCP without a key (the configuration saw to it): only queries
    bool stranger = tcp_peer.has_value();  // it has not proven who it is
    if (worker_channel) {
      caller = Caller::WorkerChannel();
    } else if (!tcp_peer) {
      caller = PeerCaller(socket.native_handle());
    } else if (ctx.cluster.key != nullptr) {
      if (!co_await Authenticate(socket, *tcp_peer, &caller)) co_return;
      if (!caller.worker_only) {
        caller.may_change = true;  // the holder of the cluster's key, for the uid it names
        caller.names_uid = true;
        stranger = false;
        if (ticket) ticket->Exempt();
      }
    }
    for (;;) {
      // A Slurm task's channel holds nothing until its hello proves its token: it gets no more
      // time than a handshake to send it.
      Result<net::Frame> frame = Status::Error("unread");
      if (caller.slurm_task) {
        frame = co_await ReadWithin(socket, ControlServer::kHandshakeTimeout);
      } else {
        const bool unix_client = !tcp_peer && !worker_channel;
        frame = co_await ReadRequest(socket, stranger,
                                     unix_client ? std::optional<uid_t>(caller.uid) : std::nullopt);
      }
      if (!frame.ok() || frame.value().header.type != net::MessageType::kControl) co_return;
      ParsedRequest parsed = ParseControlRequest(frame.value().payload);
      if (parsed.verdict == ParsedRequest::Verdict::kClose) co_return;
      if (parsed.verdict == ParsedRequest::Verdict::kBadVersion) {
        const json reply_ = Error("bad_request", std::string(kUnsupportedVersion));
        co_await WriteJson(socket, reply_);
        co_return;
      }
      const json& request = parsed.request;
      const RequestRow* row = FindRequest(parsed.type);
      const Sender sender = row != nullptr ? row->sender : Sender::kClient;
      // A worker channel carries its worker's hello, nothing else.
      if (caller.worker_only && sender != Sender::kWorker) co_return;
      if (sender == Sender::kWorker && !caller.worker_only) {
        const json reply_ = Error("denied", "a worker introduces itself only on the channel its "
                                            "daemon gave it");
        co_await WriteJson(socket, reply_);
        co_return;
      }
      // A peer's request from another caller is, to that caller, of an unknown type.
      if ((sender == Sender::kKeyHolder && !caller.names_uid) ||
          (sender == Sender::kTcpCaller && !tcp_peer)) {
        row = nullptr;
      }
      if (row == nullptr || row->sender == Sender::kClient) {
        if (!co_await ServeClientRequest(ctx, socket, request, row, caller)) co_return;
        continue;
      }
      switch (row->kind) {
        case RequestKind::kSpawnWorker:
          co_await HostWorker(ctx, socket, request);
          co_return;
        case RequestKind::kWorkerChannel: {
          // For a worker a peer starts (a key holder), or a Slurm task: its hello comes next.
          caller = caller.names_uid ? Caller::WorkerChannel() : Caller::SlurmTaskChannel();
          const json reply_ = Ok();
          if (!co_await WriteJson(socket, reply_)) co_return;
          continue;
        }
        case RequestKind::kWorkerHello:
          co_await ServeWorkerHello(ctx, socket, request, caller.slurm_task, ticket);
          co_return;
        default:  // a client's request: served above
          co_return;
      }
    }
  }

  // Serves each connection `from` accepts that its listener's caps leave room for; refuses the
  // others at once. A Unix client is its uid, a TCP one TcpClient; root has no share to exceed.
  template <typename Acceptor>
  asio::awaitable<void> AcceptLoop(Acceptor& from) {
    constexpr bool tcp = std::is_same_v<Acceptor, asio::ip::tcp::acceptor>;
    co_await AcceptConnections(from, [this](typename Acceptor::protocol_type::socket accepted) {
      std::optional<std::string> peer;
      std::string client;
      bool exempt = false;
      if constexpr (tcp) {
        std::error_code ec;
        accepted.set_option(asio::ip::tcp::no_delay(true), ec);
        const asio::ip::tcp::endpoint remote = accepted.remote_endpoint(ec);
        peer = ec ? std::string("a TCP client")
                  : remote.address().to_string() + ":" + std::to_string(remote.port());
        std::optional<uid_t> local;
        client = TcpClient(accepted.native_handle(), &local);
        exempt = local == 0u;  // root of this host: a peer daemon, the administrator
      } else {
        const uid_t uid = PeerCaller(accepted.native_handle()).uid;
        client = uid == static_cast<uid_t>(-1) ? "an unknown uid" : "uid " + std::to_string(uid);
        exempt = uid == 0;
      }
      std::string why;
      std::optional<ConnectionGate::Ticket> ticket =
          (tcp ? tcp_gate : unix_gate).Admit(client, &why, exempt);
      if (!ticket) {
        asio::co_spawn(ctx.io, Refuse(Socket(std::move(accepted)), std::move(why)), asio::detached);
        return;
      }
      asio::co_spawn(ctx.io, Session(Socket(std::move(accepted)), std::move(peer), false,
                                 std::move(ticket)),
                     asio::detached);
    });
  }

  Status ListenTcp() {
    const std::string& listen = ctx.cluster.listen;
    const std::optional<net::HostPort> where = net::SplitHostPort(listen);
    if (!where) return Status::Error(listen + ": not an ADDR:PORT address");
    std::error_code ec;
    asio::ip::tcp::resolver resolver(ctx.io);
    const auto found = resolver.resolve(where->host, std::to_string(where->port),
                                        asio::ip::tcp::resolver::passive, ec);
    if (ec || found.empty()) {
      return Status::Error("[cluster] listen " + listen + ": " +
                           (ec ? ec.message() : "no address"));
    }
    const asio::ip::tcp::endpoint endpoint = found.begin()->endpoint();
    tcp_acceptor.open(endpoint.protocol(), ec);
    if (!ec) tcp_acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) tcp_acceptor.bind(endpoint, ec);
    if (!ec) tcp_acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return Status::Error("[cluster] listen " + listen + ": " + ec.message());
    return Status::Ok();
  }

  ControlContext ctx;
  std::string socket_path;
  unsigned socket_mode;
  net::NonceCache nonces;  // client nonces of recent handshakes: a replayed hello is refused
  ConnectionGate unix_gate;
  ConnectionGate tcp_gate;
  ByteBudget preauth{ControlServer::kPreAuthBudget};  // frames of connections not yet proven
  std::unordered_map<uid_t, ByteBudget> client_budgets;  // Unix-socket request frames, per uid
  asio::local::stream_protocol::acceptor acceptor;
  asio::ip::tcp::acceptor tcp_acceptor;
};

ControlServer::ControlServer(asio::io_context& io, asio::thread_pool& pool, store::Store& store,
                             JobManager& jobs, std::string socket_path, unsigned socket_mode,
                             ClusterSide cluster, ListenerCaps caps)
    : impl_(std::make_unique<Impl>(io, pool, store, jobs, std::move(socket_path), socket_mode,
                                   std::move(cluster), caps)) {
  jobs.SetChannelSink([this](int fd) { ServeWorkerChannel(fd); });
}

ControlServer::~ControlServer() {
  impl_->ctx.jobs.SetChannelSink({});
  Close();
}

void ControlServer::ServeWorkerChannel(int fd) {
  Socket socket(impl_->ctx.io, asio::generic::stream_protocol(asio::local::stream_protocol()), fd);
  asio::co_spawn(impl_->ctx.io, impl_->Session(std::move(socket), std::nullopt, true, std::nullopt),
                 asio::detached);
}

Status ControlServer::Listen() {
  const std::string& path = impl_->socket_path;
  if (path.empty()) return impl_->ctx.cluster.listen.empty() ? Status::Ok() : impl_->ListenTcp();
  // A socket file that accepts a connection belongs to a live daemon: leave it alone.
  {
    asio::local::stream_protocol::socket probe(impl_->ctx.io);
    std::error_code ec;
    probe.connect(asio::local::stream_protocol::endpoint(path), ec);
    if (!ec) return Status::Error(path + ": another daemon is already listening there");
  }
  ::unlink(path.c_str());
  std::error_code ec;
  impl_->acceptor.open(asio::local::stream_protocol(), ec);
  if (!ec) impl_->acceptor.bind(asio::local::stream_protocol::endpoint(path), ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::Error(path + ": cannot listen: " + ec.message());
  if (::chmod(path.c_str(), impl_->socket_mode) != 0) {
    return Status::Error(path + ": cannot set its mode: " + std::strerror(errno));
  }
  if (impl_->ctx.cluster.listen.empty()) return Status::Ok();
  return impl_->ListenTcp();
}

void ControlServer::SetSweeps(SweepDriver* sweeps) { impl_->ctx.sweeps = sweeps; }

void ControlServer::Start() {
  if (impl_->acceptor.is_open()) {
    asio::co_spawn(impl_->ctx.io, impl_->AcceptLoop(impl_->acceptor), asio::detached);
  }
  if (impl_->tcp_acceptor.is_open()) {
    asio::co_spawn(impl_->ctx.io, impl_->AcceptLoop(impl_->tcp_acceptor), asio::detached);
  }
}

void ControlServer::Close() {
  std::error_code ignored;
  impl_->tcp_acceptor.close(ignored);
  if (!impl_->acceptor.is_open()) return;
  impl_->acceptor.close(ignored);
  ::unlink(impl_->socket_path.c_str());
}

}  // namespace dtrain::server
