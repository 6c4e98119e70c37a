#include "daemon/server/control_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/generic/stream_protocol.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/steady_timer.hpp>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <deque>
#include <unordered_map>
#include <optional>
#include <type_traits>

#include "core/net/host_info.h"
#include "core/net/frame_stream.h"
#include "daemon/server/account.h"
#include "daemon/server/async.h"
#include "daemon/server/connection_gate.h"
#include "daemon/server/control_request.h"
#include "daemon/server/local_peer.h"
#include "daemon/server/log_quota.h"
#include "daemon/server/nodes_view.h"
#include "daemon/server/request_table.h"
#include "daemon/server/worker_channel_request.h"
#include "daemon/store/job_diagnosis.h"
#include "daemon/store/job_removal.h"
#include "daemon/store/job_views.h"

extern char** environ;

namespace dtrain::server {
namespace {

using json = nlohmann::json;
// Unix and TCP connections alike.
using Socket = asio::generic::stream_protocol::socket;
using store::JobState;
using namespace std::chrono_literals;

constexpr std::uint32_t kMaxClientPayload = 16u << 20;
constexpr std::uint32_t kMaxHandshakePayload = 4096;
constexpr std::uint32_t kMaxWorkerPayload = 1u << 30;  // checkpoints of large models
constexpr std::size_t kLogChunk = 1000;               // lines per `lines` frame

json Ok(json body = json::object()) {
  body["v"] = 1;
  body["ok"] = true;
  return body;
}

json Error(const std::string& code, const std::string& message) {
  return {{"v", 1}, {"ok", false}, {"code", code}, {"error", message}};
}

json Error(const Refusal& r) {
  json e = Error(r.code, r.message);
  if (!r.diagnostics.empty()) {
    json diags = json::array();
    for (const config::Diagnostic& d : r.diagnostics) {
      diags.push_back({{"file", d.file},
                       {"line", d.line},
                       {"column", d.column},
                       {"key", d.key},
                       {"message", d.message}});
    }
    e["diagnostics"] = std::move(diags);
  }
  return e;
}

json PeersJson(const std::vector<PeerAddress>& peers) {
  json out = json::array();
  for (const PeerAddress& p : peers) {
    out.push_back({{"rank", p.rank},
                   {"role", p.role},
                   {"host", p.host},
                   {"port", p.port},
                   {"partition_port", p.partition_port}});
  }
  return out;
}

// `lines` frames' payloads for `kept`, kLogChunk lines each.
std::vector<std::string> LinesPayloads(const std::vector<store::LogRow>& kept) {
  std::vector<std::string> payloads;
  for (std::size_t i = 0; i < kept.size(); i += kLogChunk) {
    json lines = json::array();
    for (std::size_t k = i; k < std::min(kept.size(), i + kLogChunk); ++k) {
      lines.push_back(store::LogLineJson(kept[k]));
    }
    json reply = Ok();
    reply["lines"] = std::move(lines);
    payloads.push_back(reply.dump());
  }
  return payloads;
}

// Replies built from the store on the blocking pool (plain functions, not coroutines).
json MetricsReply(store::Store& store, std::int64_t job, const std::string& name) {
  if (!store.GetJob(job).ok()) return Error("not_found", "no job " + std::to_string(job));
  auto rows = store.Metrics(job, "");
  if (!rows.ok()) return Error("internal", rows.status().message());
  json metrics = json::array();
  for (const store::MetricRow& m : rows.value()) {
    if (m.name.find(name) != std::string::npos) metrics.push_back(store::MetricJson(m));
  }
  json reply = Ok();
  reply["metrics"] = std::move(metrics);
  return reply;
}

json WhyReply(store::Store& store, std::int64_t job, std::size_t lines) {
  if (!store.GetJob(job).ok()) return Error("not_found", "no job " + std::to_string(job));
  Result<json> why = store::DiagnoseJob(store, job, lines);
  if (!why.ok()) return Error("internal", why.status().message());
  json reply = Ok();
  reply["why"] = std::move(why).value();
  return reply;
}

json CheckpointsReply(store::Store& store, std::int64_t job) {
  if (!store.GetJob(job).ok()) return Error("not_found", "no job " + std::to_string(job));
  auto rows = store.Checkpoints(job);
  if (!rows.ok()) return Error("internal", rows.status().message());
  json list = json::array();
  for (const store::CheckpointInfo& c : rows.value()) {
    list.push_back({{"step", c.step}, {"time", c.time}, {"bytes", c.bytes},
                    {"checksum", store::FormatChecksum(c.checksum)}});
  }
  json reply = Ok();
  reply["checkpoints"] = std::move(list);
  return reply;
}

// A worker started here for a job coordinated by a peer, and the connection its stand-in holds
// there: events (the reply, its lines, its exit) queue in `out` for one writer; the stand-in's
// stop orders come in on the same socket.
struct HostedWorker {
  HostedWorker(Socket s, asio::io_context& io, std::uint64_t log_quota)
      : socket(std::move(s)), wake(io), lines(log_quota) {}
  Socket socket;
  std::deque<std::string> out;  // control payloads still to send
  bool exited = false;          // its exit is in `out` (or was sent)
  pid_t pid = 0;
  asio::steady_timer wake;      // cancelled when `out` grows
  LogQuota lines;               // what of its output is passed on: `out` stays bounded
  void Push(const json& event) {
    // A line need not be UTF-8: its bad bytes travel as U+FFFD.
    out.push_back(event.dump(-1, ' ', false, json::error_handler_t::replace));
    wake.cancel();
  }
  void PushLine(std::string_view stream, std::string_view line) {
    switch (lines.Admit(line.size())) {
      case LogQuota::kKeep:
        Push({{"v", 1}, {"type", "line"}, {"stream", stream}, {"line", line}});
        break;
      case LogQuota::kNote:
        Push({{"v", 1}, {"type", "line"}, {"stream", "stderr"}, {"line", lines.Note()}});
        break;
      case LogQuota::kDropped:
        break;
    }
  }
  void PushExit(ProcessExit exit) {
    if (lines.dropped_lines() > 0) {
      Push({{"v", 1}, {"type", "line"}, {"stream", "stderr"}, {"line", lines.SummaryLine()}});
    }
    exited = true;
    Push({{"v", 1}, {"type", "exit"}, {"exit_status", exit.exit_status}, {"signal", exit.signal}});
  }
};

// Who sent a connection's requests.
struct Caller {
  uid_t uid = static_cast<uid_t>(-1);  // -1: nobody (owns nothing, is not root)
  gid_t gid = static_cast<gid_t>(-1);
  bool may_change = false;   // submit, cancel, send heartbeats
  bool names_uid = false;    // a key holder over TCP: each request names the uid it acts as
  bool worker_only = false;  // a worker channel: a worker's hello and its messages, nothing else
  // A worker channel a TCP client opened without the cluster key: only a Slurm task of a job
  // placed by Slurm may be admitted on it (its token is its only credential).
  bool slurm_task = false;

  static Caller WorkerChannel() {
    return Caller{static_cast<uid_t>(-1), static_cast<gid_t>(-1), false, false, true, false};
  }
  static Caller SlurmTaskChannel() {
    return Caller{static_cast<uid_t>(-1), static_cast<gid_t>(-1), false, false, true, true};
  }
};

// A Unix-socket caller: the uid and gid the kernel says its process had when it connected.
Caller PeerCaller(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return Caller{};  // unknown: owns nothing, is not root, may only query
  }
  return Caller{cred.uid, cred.gid, true, false, false};
}

json RemovedReply(const Removed& removed, bool dry_run) {
  if (removed.refusal) return Error(*removed.refusal);
  json jobs = json::array();
  for (const store::JobRecord& job : removed.jobs) jobs.push_back(store::RemovedJobJson(job));
  json reply = Ok();
  reply["removed"] = std::move(jobs);
  reply["reclaimed"] = removed.reclaimed;
  reply["dry_run"] = dry_run;
  return reply;
}

// The `set` of a resume request: a list of strings (absent: none); nullopt when ill-typed.
std::optional<std::vector<std::string>> SetField(const json& request) {
  std::vector<std::string> overrides;
  const auto it = request.find("set");
  if (it == request.end()) return overrides;
  if (!it->is_array()) return std::nullopt;
  for (const json& item : *it) {
    if (!item.is_string()) return std::nullopt;
    overrides.push_back(item.get<std::string>());
  }
  return overrides;
}

// A prune request's filter for `caller` (root: everyone's jobs); an error for bad fields.
Result<store::PruneFilter> PruneFilterOf(const json& request, uid_t caller) {
  store::PruneFilter filter;
  const double older_than = NumberField(request, "older_than").value_or(-1);
  if (older_than < 0) return Status::Error("prune needs \"older_than\" (seconds, at least 0)");
  filter.before =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() -
      older_than;
  if (const auto states = request.find("states"); states != request.end()) {
    if (!states->is_array()) return Status::Error("prune's \"states\" is a list of state names");
    for (const json& name : *states) {
      Result<JobState> state = store::ParseEndedState(name.is_string() ? name.get<std::string>() : "");
      if (!state.ok()) return state.status();
      filter.states.push_back(state.value());
    }
  }
  if (caller != 0) filter.owner = static_cast<std::int64_t>(caller);
  return filter;
}

}  // namespace

struct ControlServer::Impl {
  Impl(asio::io_context& io_context, asio::thread_pool& blocking, store::Store& run_store,
       JobManager& manager, std::string path, unsigned mode, ClusterSide cluster_side,
       const ListenerCaps& caps)
      : io(io_context),
        pool(blocking),
        store(run_store),
        jobs(manager),
        socket_path(std::move(path)),
        socket_mode(mode),
        cluster(std::move(cluster_side)),
        unix_gate(caps.unix_socket),
        tcp_gate(caps.tcp),
        acceptor(io_context),
        tcp_acceptor(io_context) {}

  json NodesReply() const {
    json nodes = NodesJson(cluster.node_name, cluster.listen, jobs, cluster.membership);
    json reply = Ok();
    reply["nodes"] = std::move(nodes);
    return reply;
  }

  // The server's side of core/net/auth.md, bounded by kHandshakeTimeout; false: the caller
  // failed it (it was told why when it got that far) and the connection must close. A first
  // frame asking for a worker channel instead makes `caller` a Slurm task's channel.
  asio::awaitable<bool> Authenticate(Socket& socket, const std::string& peer, Caller* caller) {
    asio::steady_timer deadline(io);
    deadline.expires_after(ControlServer::kHandshakeTimeout);
    deadline.async_wait([&socket](const std::error_code& ec) {
      std::error_code ignored;
      if (!ec) socket.close(ignored);  // a stale handshake: the pending read fails
    });
    net::ServerHandshake handshake(*cluster.key, nonces, peer);
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

  // The JOB object of control_protocol.md; an error when the store has no such job. The store's
  // view, with what only this daemon knows: restarts not yet recorded, why a queued job waits.
  asio::awaitable<Result<json>> JobObject(std::int64_t id, bool with_events) {
    Result<json> out = co_await OffThread(
        pool, [this, id, with_events] { return store::StoredJobJson(store, id, with_events); });
    if (!out.ok()) co_return out;
    json& job = out.value();
    if (auto live = jobs.Live(id)) store::OverlayLive(job, live->restarts, live->pending_reason);
    co_return out;
  }

  asio::awaitable<json> JobReply(std::int64_t id) {
    Result<json> job = co_await JobObject(id, true);
    if (!job.ok()) co_return Error("not_found", "no job " + std::to_string(id));
    json reply = Ok();
    reply["job"] = std::move(job).value();
    co_return reply;
  }

  // The refusal's error, or else the job's reply (after a change the manager accepted).
  asio::awaitable<json> JobReplyUnless(std::optional<Refusal> refused, std::int64_t id) {
    if (refused) co_return Error(*refused);
    co_return co_await JobReply(id);
  }

  // Waits (polling the store) until the job has ended; false if it does not exist.
  asio::awaitable<bool> WaitForEnd(std::int64_t id) {
    asio::steady_timer tick(io);
    for (;;) {
      auto job = co_await OffThread(pool, [this, id] { return store.GetJob(id); });
      if (!job.ok()) co_return false;
      if (store::IsTerminal(job.value().state)) co_return true;
      tick.expires_after(100ms);
      co_await tick.async_wait(asio::use_awaitable);
    }
  }

  // The user a request acts as: the connection's, or the uid a key holder's request names (with
  // that user's primary group here); an error says why there is none.
  Result<Owner> ActingUser(const json& request, const Caller& caller) const {
    if (!caller.names_uid) {
      if (caller.uid == static_cast<uid_t>(-1)) {
        return Status::Error("this daemon does not know who is asking over TCP without a cluster "
                             "key: use its Unix socket, or give the daemons [cluster] key_file");
      }
      return Owner{caller.uid, caller.gid};
    }
    const std::optional<std::int64_t> uid = IntField(request, "uid");
    if (!uid || *uid < 0 || *uid >= static_cast<std::int64_t>(static_cast<uid_t>(-1))) {
      return Status::Error("over TCP, a request that acts for a user names its \"uid\"");
    }
    if (*uid == 0 && !cluster.allow_root) {
      return Status::Error("uid 0 may not act over TCP on this daemon (its [cluster] allow_root "
                           "is false): act as an ordinary user, or use its Unix socket");
    }
    Result<Account> account = ResolveAccount(static_cast<uid_t>(*uid), kPrimaryGroup);
    if (!account.ok()) return account.status();
    return Owner{account.value().uid, account.value().gid};
  }

  // An error reply unless `uid` owns job `id` or is root.
  asio::awaitable<std::optional<json>> OwnerOnly(std::int64_t id, uid_t uid,
                                                 const std::string& what) {
    auto job = co_await OffThread(pool, [this, id] { return store.GetJob(id); });
    if (!job.ok()) co_return Error("not_found", "no job " + std::to_string(id));
    const std::int64_t owner = job.value().owner_uid;
    if (uid == 0 || static_cast<std::int64_t>(uid) == owner) co_return std::nullopt;
    co_return Error("denied", "job " + std::to_string(id) + " belongs to uid " +
                                  std::to_string(owner) + "; only its owner or root may " + what +
                                  " it");
  }

  asio::awaitable<json> Submit(const json& request, Owner owner) {
    auto text = StringField(request, "job_toml");
    if (!text) co_return Error("bad_request", "submit needs \"job_toml\" (a string)");
    const std::string source = StringField(request, "source").value_or("job.toml");
    std::optional<int> priority;
    if (auto p = IntField(request, "priority")) priority = static_cast<int>(*p);
    const std::optional<std::string> name = StringField(request, "name");
    Submitted s = co_await jobs.Submit(*text, source, owner, name, priority);
    if (s.refusal) co_return Error(*s.refusal);
    co_return co_await JobReply(s.id);
  }

  asio::awaitable<json> List(const json& request) {
    std::optional<JobState> state;
    if (auto name = StringField(request, "state")) {
      auto parsed = store::ParseJobState(*name);
      if (!parsed.ok()) co_return Error("bad_request", parsed.status().message());
      state = parsed.value();
    }
    const auto limit = static_cast<std::size_t>(std::max<std::int64_t>(
        0, IntField(request, "limit").value_or(20)));
    auto ids = co_await OffThread(
        pool, [this, state, limit] { return store::NewestJobIds(store, state, limit); });
    if (!ids.ok()) co_return Error("internal", ids.status().message());
    json list = json::array();
    for (const std::int64_t id : ids.value()) {
      Result<json> job = co_await JobObject(id, false);
      if (job.ok()) list.push_back(std::move(job).value());
    }
    json reply = Ok();
    reply["jobs"] = std::move(list);
    co_return reply;
  }

  // Streams `lines` frames, then `end`. Returns false if the connection broke.
  asio::awaitable<bool> Logs(Socket& socket, const json& request, std::int64_t id) {
    std::int64_t after = IntField(request, "after").value_or(0);
    const auto worker = IntField(request, "worker");
    const auto tail = IntField(request, "tail");
    const double since = NumberField(request, "since").value_or(0.0);
    const bool follow = BoolField(request, "follow");
    const bool progress = follow && BoolField(request, "progress");
    std::string last_progress;
    bool first = true;
    asio::steady_timer tick(io);
    for (int ticks = 0;; ++ticks) {
      // Whether the job had ended is read BEFORE its lines, so the lines read after it include
      // the last ones (a job's state turns terminal only once its logs are committed).
      auto state = co_await OffThread(pool, [this, id] { return store.GetJob(id); });
      if (!state.ok()) {
        const json reply_ = Error("not_found", "no job " + std::to_string(id));
        co_return co_await WriteJson(socket, reply_);
      }
      const bool ended = store::IsTerminal(state.value().state);
      for (;;) {
        auto rows = co_await OffThread(
            pool, [this, id, after] { return store.Logs(id, after, 100000); });
        if (!rows.ok()) {
          const json reply_ = Error("internal", rows.status().message());
          co_return co_await WriteJson(socket, reply_);
        }
        const std::size_t read = rows.value().size();
        const std::vector<std::string> payloads = LinesPayloads(
            SelectLines(rows.value(), &after, worker, since, first ? tail : std::nullopt));
        first = false;
        for (const std::string& payload : payloads) {
          if (!co_await WriteFrame(socket, net::MessageType::kControl, 0, payload)) co_return false;
        }
        if (read < 100000) break;
      }
      if (!follow || ended) break;
      if (progress && ticks % 10 == 0) {  // once a second, when the job has moved
        Result<json> job = co_await JobObject(id, false);
        if (job.ok()) {
          json reply = Ok();
          reply["progress"] = store::ProgressJson(job.value());
          if (std::string payload = reply.dump(); payload != last_progress) {
            if (!co_await WriteFrame(socket, net::MessageType::kControl, 0, payload)) {
              co_return false;
            }
            last_progress = std::move(payload);
          }
        }
      }
      tick.expires_after(100ms);
      co_await tick.async_wait(asio::use_awaitable);
    }
    Result<json> job = co_await JobObject(id, false);
    json reply = Ok();
    reply["end"] = true;
    reply["job"] = job.ok() ? job.value() : json();
    co_return co_await WriteJson(socket, reply);
  }

  asio::awaitable<bool> Checkpoint(Socket& socket, const json& request, std::int64_t id) {
    const auto step = IntField(request, "step");
    struct Found {
      std::string spec_toml;
      std::int64_t owner_uid = 0, owner_gid = -1;
      store::CheckpointData checkpoint;
    };
    Result<Found> found = co_await OffThread(pool, [this, id, step]() -> Result<Found> {
      auto job = store.GetJob(id);
      if (!job.ok()) return Status::Error("no job " + std::to_string(id));
      Found f{job.value().spec_toml, job.value().owner_uid, job.value().owner_gid, {}};
      if (step) {
        auto c = store.LoadCheckpoint(id, *step);
        if (!c.ok()) return c.status();
        f.checkpoint = std::move(c).value();
      } else {
        auto latest = store.LatestCheckpoint(id);
        if (!latest.ok()) return latest.status();
        if (!latest.value().checkpoint) {
          return Status::Error("job " + std::to_string(id) + " has no checkpoint");
        }
        f.checkpoint = std::move(*latest.value().checkpoint);
      }
      return f;
    });
    if (!found.ok()) {
      const json reply_ = Error("not_found", found.status().message());
      co_return co_await WriteJson(socket, reply_);
    }
    json reply = Ok();
    reply["step"] = found.value().checkpoint.step;
    reply["spec_toml"] = found.value().spec_toml;
    // Whose rights an export reads the job's data with (dtrain export's feature scaling).
    reply["owner"] = found.value().owner_uid;
    reply["owner_gid"] = found.value().owner_gid;
    if (!co_await WriteJson(socket, reply)) {
      co_return false;
    }
    const std::string blob = store::EncodeCheckpoint(found.value().checkpoint);
    co_return co_await WriteFrame(socket, net::MessageType::kCheckpoint,
                                  static_cast<std::uint64_t>(id), blob);
  }

  asio::awaitable<bool> WriteJson(Socket& socket, const json& message) {
    const std::string payload = message.dump();
    co_return co_await WriteFrame(socket, net::MessageType::kControl, 0, payload);
  }

  // One client request of type `row` (null: an unknown type); false when the connection should
  // close.
  asio::awaitable<bool> Serve(Socket& socket, const json& request, const RequestRow* row,
                              const Caller& caller) {
    if (!caller.may_change && !(row != nullptr && row->query)) {
      const json reply_ = Error("denied",
                                "this daemon has no cluster key, so over TCP it only answers "
                                "queries; submit through its Unix socket, or give the daemons "
                                "[cluster] key_file");
      co_return co_await WriteJson(socket, reply_);
    }
    if (row == nullptr) {
      const std::string type = StringField(request, "type").value_or("");
      const json unknown = Error("bad_request", type.empty() ? "a request needs \"type\""
                                                             : "unknown request type '" + type + "'");
      co_return co_await WriteJson(socket, unknown);
    }
    const std::string type(row->type);
    const auto id = IntField(request, "id");
    if (const std::optional<std::string> missing = MissingField(*row, request)) {
      const json reply_ = Error("bad_request", *missing);
      co_return co_await WriteJson(socket, reply_);
    }
    Owner acting;
    if (row->acts_for_user) {
      Result<Owner> who = ActingUser(request, caller);
      if (!who.ok()) {
        const json reply_ = Error("denied", who.status().message());
        co_return co_await WriteJson(socket, reply_);
      }
      acting = who.value();
    }
    if (!row->owner_only.empty()) {
      std::optional<json> refused = co_await OwnerOnly(*id, acting.uid, std::string(row->owner_only));
      if (refused) co_return co_await WriteJson(socket, *refused);
    }
    if (type == "nodes") co_return co_await WriteJson(socket, NodesReply());
    if (type == "node_heartbeat") {
      json reply = Ok();
      reply["node"] = NodesJson(cluster.node_name, cluster.listen, jobs, nullptr)[0];  // self
      co_return co_await WriteJson(socket, reply);
    }
    if (type == "version") {
      json reply = Ok();
      reply["version"] = DTRAIND_VERSION;
      reply["protocol"] = net::kProtocolVersion;
      reply["pid"] = ::getpid();
      co_return co_await WriteJson(socket, reply);
    }
    if (type == "submit") {
      const json reply_ = co_await Submit(request, acting);
      co_return co_await WriteJson(socket, reply_);
    }
    if (type == "status") {
      const json reply_ = co_await JobReply(*id);
      co_return co_await WriteJson(socket, reply_);
    }
    if (type == "list") {
      const json reply_ = co_await List(request);
      co_return co_await WriteJson(socket, reply_);
    }
    if (type == "cancel") {
      const json reply_ = co_await JobReplyUnless(co_await jobs.Cancel(*id, acting.uid), *id);
      co_return co_await WriteJson(socket, reply_);
    }
    if (type == "resume") {
      const std::optional<std::vector<std::string>> overrides = SetField(request);
      if (!overrides) {
        const json reply_ = Error("bad_request", "resume's \"set\" is a list of KEY=VALUE strings");
        co_return co_await WriteJson(socket, reply_);
      }
      const json reply_ =
          co_await JobReplyUnless(co_await jobs.Resume(*id, acting.uid, *overrides), *id);
      co_return co_await WriteJson(socket, reply_);
    }
    if (type == "rm") {
      const json reply_ = RemovedReply(co_await jobs.Remove(*id, acting.uid), false);
      co_return co_await WriteJson(socket, reply_);
    }
    if (type == "prune") {
      Result<store::PruneFilter> filter = PruneFilterOf(request, acting.uid);
      if (!filter.ok()) {
        const json reply_ = Error("bad_request", filter.status().message());
        co_return co_await WriteJson(socket, reply_);
      }
      const bool dry_run = BoolField(request, "dry_run");
      const json reply_ = RemovedReply(co_await jobs.Prune(filter.value(), dry_run), dry_run);
      co_return co_await WriteJson(socket, reply_);
    }
    if (type == "wait") {
      if (!co_await WaitForEnd(*id)) {
        const json reply_ = Error("not_found", "no job " + std::to_string(*id));
        co_return co_await WriteJson(socket, reply_);
      }
      const json reply_ = co_await JobReply(*id);
      co_return co_await WriteJson(socket, reply_);
    }
    if (type == "logs") co_return co_await Logs(socket, request, *id);
    if (type == "metrics" || type == "checkpoints") {
      const std::string name = StringField(request, "name").value_or("");
      const std::int64_t job = *id;
      auto build = [this, job, name, metrics = type == "metrics"] {
        return metrics ? MetricsReply(store, job, name) : CheckpointsReply(store, job);
      };
      const json reply = co_await OffThread(pool, build);
      co_return co_await WriteJson(socket, reply);
    }
    if (type == "checkpoint") co_return co_await Checkpoint(socket, request, *id);
    if (type == "why") {
      const std::int64_t job = *id;
      const auto lines = static_cast<std::size_t>(
          std::clamp<std::int64_t>(IntField(request, "lines").value_or(10), 0, 1000));
      const json reply = co_await OffThread(pool, [this, job, lines] { return WhyReply(store, job, lines); });
      co_return co_await WriteJson(socket, reply);
    }
    co_return true;
  }

  // When a worker's connection last showed life, for its heartbeat watchdog.
  struct WorkerPulse {
    std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
    bool busy = false;   // this daemon is handling a frame: the worker waits for us
    bool ended = false;  // the connection is over
  };

  // Tells the job manager when a worker's connection has been silent for its heartbeat timeout.
  asio::awaitable<void> WatchPulse(std::shared_ptr<WorkerPulse> pulse, std::int64_t job,
                                   int rank, std::string token,
                                   std::chrono::milliseconds timeout) {
    asio::steady_timer tick(io);
    while (!pulse->ended) {
      const auto now = std::chrono::steady_clock::now();
      if (pulse->busy) pulse->last = now;
      const auto silence = std::chrono::duration_cast<std::chrono::milliseconds>(now - pulse->last);
      if (silence >= timeout) {
        jobs.WorkerSilent(job, rank, token, silence);
        co_return;
      }
      tick.expires_after(std::min<std::chrono::milliseconds>(timeout - silence, timeout / 4 + 1ms));
      co_await tick.async_wait(asio::use_awaitable);
    }
  }

  // A worker's connection after its hello: heartbeats, metrics and checkpoints up, done at the
  // end. A watchdog reports the worker when nothing arrives for the job's heartbeat_timeout.
  asio::awaitable<void> ServeWorker(Socket& socket, std::int64_t job, int rank,
                                    const std::string& token,
                                    std::chrono::milliseconds heartbeat_timeout) {
    auto pulse = std::make_shared<WorkerPulse>();
    asio::co_spawn(io, WatchPulse(pulse, job, rank, token, heartbeat_timeout), asio::detached);
    struct EndPulse {
      WorkerPulse& pulse;
      ~EndPulse() { pulse.ended = true; }
    } end_pulse{*pulse};
    for (;;) {
      pulse->busy = false;
      Result<net::Frame> frame = co_await ReadFrame(socket, kMaxWorkerPayload, &pulse->last);
      if (!frame.ok()) co_return;
      pulse->busy = true;
      const net::FrameHeader& h = frame.value().header;
      if (h.type == net::MessageType::kHeartbeat) continue;
      if (h.type == net::MessageType::kMetrics) {
        const std::optional<std::vector<train::MetricPoint>> points =
            ParseMetricPoints(frame.value().payload);
        if (!points) co_return;
        jobs.WorkerMetrics(job, rank, *points);
      } else if (h.type == net::MessageType::kCheckpoint) {
        Status saved = co_await jobs.WorkerCheckpoint(job, rank, frame.value().payload);
        const json reply_ = saved.ok() ? Ok() : Error("internal", saved.message());
        if (!co_await WriteJson(socket, reply_)) {
          co_return;
        }
      } else if (h.type == net::MessageType::kControl) {
        json done = json::parse(frame.value().payload, nullptr, false);
        if (done.is_discarded() || StringField(done, "type") != "worker_done") co_return;
        jobs.WorkerDone(job, rank, StringField(done, "stop").value_or(""),
                        IntField(done, "steps").value_or(0),
                        StringField(done, "error").value_or(""),
                        StringField(done, "reason").value_or(""));
        const json reply_ = Ok();
        if (!co_await WriteJson(socket, reply_)) co_return;
      } else {
        co_return;
      }
    }
  }

  // A connection's life; whatever goes wrong in it (even an exception from a library) closes
  // that connection only.
  // `spawn_worker` from a peer's stand-in: opens the worker's channel to its coordinator (an
  // authenticated TCP connection, turned into a worker channel), starts the worker here as the
  // job's owner with that channel as its fd 3, then the connection carries its lines and exit up
  // and stop orders down until it has exited. Takes the socket over.
  asio::awaitable<void> HostWorker(Socket& socket, const json& request) {
    const auto job = IntField(request, "job");
    const auto rank = IntField(request, "rank");
    const auto token = StringField(request, "token");
    const auto coordinator = StringField(request, "coordinator");
    const auto uid = IntField(request, "uid");
    const auto gid = IntField(request, "gid");
    const auto memory_limit = IntField(request, "memory_limit").value_or(0);
    Result<Launch> launch = Status::Error("spawn_worker needs job, rank, token, coordinator, uid "
                                          "and gid");
    if (cluster.supervisor == nullptr) {
      launch = Status::Error("this daemon does not start workers for peers");
    } else if (job && rank && token && coordinator && uid && gid) {
      launch = HostedLaunch(*job, *rank, *token, static_cast<uid_t>(*uid), static_cast<gid_t>(*gid));
    }
    if (!launch.ok()) {
      const json reply_ = Error("denied", launch.status().message());
      co_await WriteJson(socket, reply_);
      co_return;
    }
    auto connect = [this, address = *coordinator] { return OpenChannelTo(address); };
    Result<int> channel = co_await OffThread(pool, connect);
    if (!channel.ok()) {
      const json reply_ = Error("internal", "cannot reach the coordinator at " + *coordinator +
                                                ": " + channel.status().message());
      co_await WriteJson(socket, reply_);
      co_return;
    }
    launch.value().connection = channel.value();
    launch.value().address_space = static_cast<std::uint64_t>(std::max<std::int64_t>(memory_limit, 0));
    auto hosted = std::make_shared<HostedWorker>(std::move(socket), io, cluster.log_quota);
    Result<pid_t> pid = cluster.supervisor->Spawn(
        launch.value(),
        [hosted](std::string_view stream, std::string_view line) {
          hosted->PushLine(stream, line);
        },
        [hosted](ProcessExit exit) { hosted->PushExit(exit); });
    ::close(channel.value());
    if (!pid.ok()) {
      const json reply_ = Error("internal", "cannot start the worker: " + pid.status().message());
      co_await WriteJson(hosted->socket, reply_);
      co_return;
    }
    hosted->pid = pid.value();
    json started = Ok();
    started["pid"] = pid.value();
    started["node"] = cluster.node_name;
    hosted->out.push_front(started.dump());  // before any line: no handler has run yet
    asio::co_spawn(io, SendHostedEvents(hosted), asio::detached);
    asio::co_spawn(io, ReadStopOrders(hosted), asio::detached);
  }

  // How a worker a peer asked for starts here (its channel still to be opened), or why it may not:
  // uid 0 only with allow_root; another user than the daemon's only when it runs as the owner,
  // and then only a uid with an account here, in one of that account's own groups (ResolveAccount:
  // the request's uid and gid are a key holder's word, checked against this host's database).
  Result<Launch> HostedLaunch(std::int64_t job, std::int64_t rank, const std::string& token,
                              uid_t uid, gid_t gid) const {
    if (uid == 0 && !cluster.allow_root) {
      return Status::Error("this daemon does not start workers as uid 0 for its peers (its "
                           "[cluster] allow_root is false)");
    }
    Launch launch;
    if (cluster.run_as_owner) {
      Result<Account> account = ResolveAccount(uid, gid);
      if (!account.ok()) return account.status();
      launch.account = std::move(account).value();
    } else if (uid != ::geteuid()) {
      return Status::Error("this daemon runs as uid " + std::to_string(::geteuid()) +
                           " and cannot start workers as uid " + std::to_string(uid));
    }
    launch.argv = {cluster.worker_exe, "worker",   "--job",        std::to_string(job),
                   "--rank",           std::to_string(rank), "--parent", std::to_string(::getpid()),
                   "--data-host",      cluster.data_host};
    launch.secret = json{{"token", token}}.dump();
    launch.environment = JobEnvironment(environ, launch.account ? &*launch.account : nullptr);
    return launch;
  }

  // A worker channel to the coordinator at `address` (blocking: run it on the pool): connected,
  // authenticated with this daemon's key, and turned into a worker channel before the worker
  // gets it, so the job's owner never holds a connection that acts for the key.
  Result<int> OpenChannelTo(const std::string& address) const {
    using namespace std::chrono_literals;
    const std::optional<net::HostPort> to = net::SplitHostPort(address);
    if (!to) return Status::Error("not HOST:PORT");
    Result<net::FrameStream> stream = net::FrameStream::ConnectTcp(to->host, to->port, 10s);
    if (!stream.ok()) return stream.status();
    stream.value().set_peer_name("the coordinator at " + address);
    if (Status auth = net::AuthenticateClient(stream.value(), *cluster.key, 10s); !auth.ok()) {
      return auth;
    }
    if (Status channel = RequestWorkerChannel(stream.value(), 10s); !channel.ok()) return channel;
    return stream.value().Release();
  }

  asio::awaitable<void> SendHostedEvents(std::shared_ptr<HostedWorker> hosted) {
    for (;;) {
      while (!hosted->out.empty()) {
        const std::string payload = std::move(hosted->out.front());
        hosted->out.pop_front();
        if (!co_await WriteFrame(hosted->socket, net::MessageType::kControl, 0, payload)) {
          if (!hosted->exited) cluster.supervisor->Stop(hosted->pid, std::chrono::milliseconds(0));
          co_return;
        }
      }
      if (hosted->exited) {
        std::error_code ignored;
        hosted->socket.shutdown(Socket::shutdown_both, ignored);
        co_return;
      }
      std::error_code ec;
      hosted->wake.expires_at(asio::steady_timer::time_point::max());
      co_await hosted->wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
  }

  // A stand-in that goes away takes its worker with it.
  asio::awaitable<void> ReadStopOrders(std::shared_ptr<HostedWorker> hosted) {
    for (;;) {
      Result<net::Frame> frame = co_await ReadFrame(hosted->socket, kMaxHandshakePayload);
      if (!frame.ok()) {
        if (!hosted->exited) cluster.supervisor->Stop(hosted->pid, std::chrono::milliseconds(0));
        co_return;
      }
      const json order = json::parse(frame.value().payload, nullptr, false);
      if (order.is_object() && StringField(order, "type") == "stop" && !hosted->exited) {
        cluster.supervisor->Stop(hosted->pid, std::chrono::hours(1));  // the stand-in's
                                                                        // coordinator escalates
      }
    }
  }

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
    asio::steady_timer deadline(io);
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
    asio::steady_timer deadline(io);
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
    } else if (cluster.key != nullptr) {
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
        if (!co_await Serve(socket, request, row, caller)) co_return;
        continue;
      }
      if (row->kind == RequestKind::kSpawnWorker) {
        co_await HostWorker(socket, request);
        co_return;
      }
      if (row->kind == RequestKind::kWorkerChannel) {
        // For a worker a peer starts (a key holder), or a Slurm task: its hello comes next.
        caller = caller.names_uid ? Caller::WorkerChannel() : Caller::SlurmTaskChannel();
        const json reply_ = Ok();
        if (!co_await WriteJson(socket, reply_)) co_return;
        continue;
      }
      {
        const std::int64_t job = IntField(request, "job").value_or(0);
        const int rank = static_cast<int>(IntField(request, "rank").value_or(-1));
        const std::string token = StringField(request, "token").value_or("");
        const auto port = static_cast<std::uint16_t>(
            std::clamp<std::int64_t>(IntField(request, "data_port").value_or(0), 0, 65535));
        const auto partition_port = static_cast<std::uint16_t>(
            std::clamp<std::int64_t>(IntField(request, "partition_port").value_or(0), 0, 65535));
        const std::string data_host = StringField(request, "data_host").value_or("");
        Result<Admission> admitted =
            co_await jobs.AdmitWorker(job, rank, token, data_host, port, partition_port,
                                      caller.slurm_task);
        if (!admitted.ok()) {
          const json reply_ = Error("denied", admitted.status().message());
          co_await WriteJson(socket, reply_);
          co_return;
        }
        if (ticket) ticket->Exempt();  // a Slurm task proven by its token, or a key holder's worker
        const Admission& a = admitted.value();
        json reply = Ok();
        reply["spec_toml"] = a.spec_toml;
        reply["data_token"] = a.data_token;
        reply["resume_step"] = a.resume_step;
        reply["peers"] = PeersJson(a.peers);
        if (!co_await WriteJson(socket, reply)) {
          co_return;
        }
        if (a.resume_step >= 0 &&
            !co_await WriteFrame(socket, net::MessageType::kCheckpoint, static_cast<std::uint64_t>(job),
                                 a.checkpoint_blob)) {
          co_return;
        }
        co_await ServeWorker(socket, job, rank, token, a.heartbeat_timeout);
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
        asio::co_spawn(io, Refuse(Socket(std::move(accepted)), std::move(why)), asio::detached);
        return;
      }
      asio::co_spawn(io, Session(Socket(std::move(accepted)), std::move(peer), false,
                                 std::move(ticket)),
                     asio::detached);
    });
  }

  Status ListenTcp() {
    const std::optional<net::HostPort> where = net::SplitHostPort(cluster.listen);
    if (!where) return Status::Error(cluster.listen + ": not an ADDR:PORT address");
    std::error_code ec;
    asio::ip::tcp::resolver resolver(io);
    const auto found = resolver.resolve(where->host, std::to_string(where->port),
                                        asio::ip::tcp::resolver::passive, ec);
    if (ec || found.empty()) {
      return Status::Error("[cluster] listen " + cluster.listen + ": " +
                           (ec ? ec.message() : "no address"));
    }
    const asio::ip::tcp::endpoint endpoint = found.begin()->endpoint();
    tcp_acceptor.open(endpoint.protocol(), ec);
    if (!ec) tcp_acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) tcp_acceptor.bind(endpoint, ec);
    if (!ec) tcp_acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return Status::Error("[cluster] listen " + cluster.listen + ": " + ec.message());
    return Status::Ok();
  }

  asio::io_context& io;
  asio::thread_pool& pool;
  store::Store& store;
  JobManager& jobs;
  std::string socket_path;
  unsigned socket_mode;
  ClusterSide cluster;
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
  impl_->jobs.SetChannelSink({});
  Close();
}

void ControlServer::ServeWorkerChannel(int fd) {
  Socket socket(impl_->io, asio::generic::stream_protocol(asio::local::stream_protocol()), fd);
  asio::co_spawn(impl_->io, impl_->Session(std::move(socket), std::nullopt, true, std::nullopt),
                 asio::detached);
}

Status ControlServer::Listen() {
  const std::string& path = impl_->socket_path;
  if (path.empty()) return impl_->cluster.listen.empty() ? Status::Ok() : impl_->ListenTcp();
  // A socket file that accepts a connection belongs to a live daemon: leave it alone.
  {
    asio::local::stream_protocol::socket probe(impl_->io);
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
  if (impl_->cluster.listen.empty()) return Status::Ok();
  return impl_->ListenTcp();
}

void ControlServer::Start() {
  if (impl_->acceptor.is_open()) {
    asio::co_spawn(impl_->io, impl_->AcceptLoop(impl_->acceptor), asio::detached);
  }
  if (impl_->tcp_acceptor.is_open()) {
    asio::co_spawn(impl_->io, impl_->AcceptLoop(impl_->tcp_acceptor), asio::detached);
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
