#include "daemon/server/web_server.h"

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read_until.hpp>
#include <asio/steady_timer.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "config/job_layout.h"
#include "core/net/host_info.h"
#include "daemon/server/async.h"
#include "daemon/server/connection_gate.h"
#include "daemon/server/dashboard_stream.h"
#include "daemon/server/http_message.h"
#include "daemon/server/local_peer.h"
#include "daemon/server/prometheus_text.h"
#include "daemon/server/socket_access.h"
#include "daemon/server/web_assets.h"
#include "daemon/store/job_views.h"

namespace dtrain::server {
namespace {

using nlohmann::json;
using store::JobState;

constexpr JobState kActiveStates[] = {JobState::kStarting, JobState::kRunning,
                                      JobState::kRecovering};
constexpr std::size_t kMaxActiveJobs = 1000;
constexpr std::string_view kTokenCookie = "dtrain_token";

HttpResponse Text(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

std::int64_t FileBytes(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<std::int64_t>(size);
}

// What the store says for /metrics, read on the blocking pool: everything but the daemon's live
// state, which the caller lays over it on the I/O thread.
Result<PrometheusSnapshot> StoreSnapshot(store::Store& store, const std::string& store_path) {
  PrometheusSnapshot s;
  Result<std::vector<std::pair<JobState, std::int64_t>>> counts = store.CountJobsByState();
  if (!counts.ok()) return counts.status();
  s.jobs_by_state = std::move(counts).value();
  const std::vector<std::string> summed = SummedWorkerMetrics();
  for (const JobState state : kActiveStates) {
    Result<std::vector<std::int64_t>> ids = store::NewestJobIds(store, state, kMaxActiveJobs);
    if (!ids.ok()) return ids.status();
    for (const std::int64_t id : ids.value()) {
      Result<json> job = store::StoredJobJson(store, id, false);
      Result<std::vector<store::MetricRow>> rates = store.LatestMetricPerWorker(id, "samples_per_sec");
      Result<std::vector<store::MetricRow>> sums = store.MetricSums(id, summed);
      if (!job.ok()) return job.status();
      if (!rates.ok()) return rates.status();
      if (!sums.ok()) return sums.status();
      s.active.push_back({.job = std::move(job).value(),
                          .newest_rates = std::move(rates).value(),
                          .sums = std::move(sums).value()});
    }
  }
  s.store_bytes = FileBytes(store_path) + FileBytes(store_path + "-wal");
  return s;
}

}  // namespace

struct WebServer::Impl {
  Impl(asio::io_context& io_context, asio::thread_pool& blocking, store::Store& run_store,
       JobManager& manager, WebOptions web_options)
      : io(io_context),
        pool(blocking),
        store(run_store),
        jobs(manager),
        options(std::move(web_options)),
        dashboard{io_context,
                  pool,
                  store,
                  jobs,
                  options.node_name,
                  options.listen,
                  options.membership,
                  options.token != nullptr,
                  options.sweeps},
        connections(options.connections),
        streams(options.streams),
        acceptor(io_context) {}

  asio::awaitable<HttpResponse> Metrics() {
    Result<PrometheusSnapshot> snapshot =
        co_await OffThread(pool, [this] { return StoreSnapshot(store, options.store_path); });
    if (!snapshot.ok()) co_return Text(500, snapshot.status().message() + "\n");
    PrometheusSnapshot& s = snapshot.value();
    s.version = options.version;
    s.queue_length = jobs.queued();
    for (ActiveJobSample& a : s.active) {
      if (const std::optional<LiveJob> live = jobs.Live(a.job["id"].get<std::int64_t>())) {
        store::OverlayLive(a.job, live->restarts, live->pending_reason);
        a.batch_size = live->batch_size;
        a.lead_rank = live->lead_rank;
      }
    }
    s.peers = options.peers;
    if (options.membership != nullptr) {
      for (const PeerState& p : options.membership->Snapshot()) s.peers_up += p.up ? 1 : 0;
    }
    HttpResponse response;
    response.content_type = kPrometheusContentType;
    response.body = PrometheusText(s);
    co_return response;
  }

  // Whether the request bears the token (as a bearer token or the cookie the dashboard's
  // sign-in sets), or none is needed.
  bool Authorized(const HttpRequest& request) const {
    if (options.token == nullptr) return true;
    constexpr std::string_view kBearer = "Bearer ";
    if (const std::optional<std::string> auth = request.Header("authorization")) {
      return auth->starts_with(kBearer) &&
             options.token->Matches(std::string_view(*auth).substr(kBearer.size()));
    }
    const std::optional<std::string> cookie =
        CookieValue(request.Header("cookie").value_or(""), kTokenCookie);
    return cookie && options.token->Matches(*cookie);
  }

  // `/?token=TOKEN`: the browser's sign-in. A right token is kept in an HttpOnly cookie and the
  // address bar loses it.
  std::optional<HttpResponse> SignIn(const HttpRequest& request) const {
    const std::optional<std::string> token = QueryValue(request.query, "token");
    if (options.token == nullptr || request.path != "/" || !token ||
        !options.token->Matches(*token)) {
      return std::nullopt;
    }
    HttpResponse moved = Text(303, "signed in\n");
    moved.headers.emplace_back("Location", "/");
    moved.headers.emplace_back("Set-Cookie", std::string(kTokenCookie) + "=" + *token +
                                                 "; Path=/; HttpOnly; SameSite=Strict");
    return moved;
  }

  // Whether the request may be answered for the host it names: always with a token (it is the
  // guard); else only for loopback names and the listen address's host, or without a Host.
  bool HostAllowed(const HttpRequest& request) const {
    if (options.token != nullptr) return true;
    const std::optional<std::string> host = request.Header("host");
    if (!host) return true;  // no browser leaves it out
    const std::string name = HostName(*host);
    return name == "localhost" || name == "127.0.0.1" || name == "[::1]" ||
           name == HostName(options.address);
  }

  // Whether the client, local user `uid` if the kernel said, may read this dashboard: anyone with
  // a token (each request is checked for it), else only the users of the control socket.
  asio::awaitable<bool> MayRead(std::optional<uid_t> uid) {
    if (options.token != nullptr) co_return true;
    if (!uid) co_return false;
    const uid_t who = *uid;
    co_return co_await OffThread(pool,
                                 [this, who] { return MayOpenSocket(who, options.socket_path); });
  }

  asio::awaitable<HttpResponse> Route(const HttpRequest& request) {
    if (request.method != "GET" && request.method != "HEAD") {
      HttpResponse refused = Text(405, "only GET and HEAD\n");
      refused.headers.emplace_back("Allow", "GET, HEAD");
      co_return refused;
    }
    if (std::optional<HttpResponse> signed_in = SignIn(request)) co_return *signed_in;
    if (!Authorized(request)) {
      HttpResponse refused =
          Text(401, "this dtraind requires its http token ([daemon] http_token_file): send "
                    "Authorization: Bearer TOKEN, or open /?token=TOKEN once in a browser\n");
      refused.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"dtraind\"");
      co_return refused;
    }
    if (request.path == "/metrics") co_return co_await Metrics();
    for (const WebAsset& asset : WebAssets()) {
      if (asset.path != request.path) continue;
      HttpResponse page;
      page.content_type = std::string(asset.media_type) + "; charset=utf-8";
      page.body = std::string(asset.body);
      page.headers.emplace_back("Content-Security-Policy",
                                "default-src 'self'; style-src 'self' 'unsafe-inline'");
      co_return page;
    }
    co_return Text(404, "no such page: dtraind serves its dashboard at / and /metrics\n");
  }

  // `client`: whom the connection counts for (TcpClient), for the stream caps; `uid`: its local
  // user, when the kernel said. The ticket holds the connection's place under the caps.
  asio::awaitable<void> Session(asio::ip::tcp::socket socket, std::string client,
                                std::optional<uid_t> uid, ConnectionGate::Ticket /*held*/) {
    asio::steady_timer deadline(io);
    deadline.expires_after(kRequestTimeout);
    deadline.async_wait([&socket](const std::error_code& ec) {
      std::error_code ignored;
      if (!ec) socket.close(ignored);  // a request too slow to arrive: the read fails
    });
    std::string head;
    std::error_code ec;
    const std::size_t n = co_await asio::async_read_until(
        socket, asio::dynamic_buffer(head, kMaxRequestHead), "\r\n\r\n",
        asio::redirect_error(asio::use_awaitable, ec));
    HttpResponse response;
    bool head_only = false;
    if (ec == asio::error::not_found) {
      response = Text(431, "the request's head is larger than " +
                               std::to_string(kMaxRequestHead) + " bytes\n");
    } else if (ec) {
      co_return;  // closed, or timed out
    } else if (std::optional<HttpRequest> request = ParseRequestHead(head.substr(0, n))) {
      head_only = request->method == "HEAD";
      std::string why;
      const bool may_read = co_await MayRead(uid);
      if (!HostAllowed(*request)) {
        response = Text(421, "this dashboard answers only for localhost, 127.0.0.1, [::1] or " +
                                 HostName(options.address) + ", not for Host " +
                                 HostName(*request->Header("host")) + "\n");
      } else if (!may_read) {
        response = Text(403, "this dashboard has no token ([daemon] http_token_file), so it shows "
                             "the jobs only to the users who may use the control socket " +
                                 options.socket_path + ", and " +
                                 (uid ? "uid " + std::to_string(*uid) + " may not"
                                      : "the daemon cannot tell which user connected") +
                                 "\n");
      } else if (request->path == "/api/stream" && request->method == "GET" &&
                 Authorized(*request)) {
        deadline.cancel();  // a stream lasts as long as its page
        if (std::optional<ConnectionGate::Ticket> stream = streams.Admit(client, &why)) {
          co_await StreamDashboard(socket, *request, dashboard);
          co_return;
        }
        response = Text(503, "too many dashboard pages open: " + why + "\n");
      } else {
        response = co_await Route(*request);
      }
    } else {
      response = Text(400, "not an HTTP/1.1 request\n");
    }
    const std::string bytes = FormatResponse(response, head_only);
    co_await asio::async_write(socket, asio::buffer(bytes),
                               asio::redirect_error(asio::use_awaitable, ec));
    deadline.cancel();
    socket.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  }

  // Serves each connection the caps leave room for; closes the others at once.
  asio::awaitable<void> AcceptLoop() {
    co_await AcceptConnections(acceptor, [this](asio::ip::tcp::socket accepted) {
      std::optional<uid_t> uid;
      std::string client = TcpClient(accepted.native_handle(), &uid), why;
      std::optional<ConnectionGate::Ticket> ticket = connections.Admit(client, &why);
      if (!ticket) return;  // `accepted` closes here
      asio::co_spawn(io, Session(std::move(accepted), std::move(client), uid, std::move(*ticket)),
                     asio::detached);
    });
  }

  asio::io_context& io;
  asio::thread_pool& pool;
  store::Store& store;
  JobManager& jobs;
  WebOptions options;
  DashboardContext dashboard;
  ConnectionGate connections;  // open connections
  ConnectionGate streams;      // open /api/stream connections, among them
  asio::ip::tcp::acceptor acceptor;
};

WebServer::WebServer(asio::io_context& io, asio::thread_pool& pool, store::Store& store,
                     JobManager& jobs, WebOptions options)
    : impl_(std::make_unique<Impl>(io, pool, store, jobs, std::move(options))) {}

WebServer::~WebServer() { Close(); }

Status WebServer::Listen() {
  const std::string& address = impl_->options.address;
  const std::optional<net::HostPort> where = net::SplitHostPort(address);
  if (!where) return Status::Error("[daemon] http " + address + ": not an ADDR:PORT address");
  std::error_code ec;
  asio::ip::tcp::resolver resolver(impl_->io);
  const auto found = resolver.resolve(where->host, std::to_string(where->port),
                                      asio::ip::tcp::resolver::passive, ec);
  if (ec || found.empty()) {
    return Status::Error("[daemon] http " + address + ": " + (ec ? ec.message() : "no address"));
  }
  const asio::ip::tcp::endpoint endpoint = found.begin()->endpoint();
  asio::ip::tcp::acceptor& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::Error("[daemon] http " + address + ": " + ec.message());
  return Status::Ok();
}

std::string WebServer::Url() const {
  std::error_code ec;
  const asio::ip::tcp::endpoint bound = impl_->acceptor.local_endpoint(ec);
  if (ec) return "http://" + impl_->options.address + "/";
  const std::string host = bound.address().is_v6() ? "[" + bound.address().to_string() + "]"
                                                   : bound.address().to_string();
  return "http://" + host + ":" + std::to_string(bound.port()) + "/";
}

void WebServer::Start() {
  if (impl_->acceptor.is_open()) asio::co_spawn(impl_->io, impl_->AcceptLoop(), asio::detached);
}

void WebServer::Close() {
  std::error_code ignored;
  impl_->acceptor.close(ignored);
}

}  // namespace dtrain::server
