#include "daemon/server/client_requests.h"

#include <optional>
#include <string>

#include "daemon/server/async.h"
#include "daemon/server/control_request.h"
#include "daemon/server/request_handlers.h"

namespace dtrain::server {
namespace {

using json = nlohmann::json;

// An error reply unless `uid` owns job `id` or is root; `what` the owner may do ("export").
asio::awaitable<std::optional<json>> OwnerOnly(ControlContext& ctx, std::int64_t id, uid_t uid,
                                               const std::string& what) {
  auto job = co_await OffThread(ctx.pool, [&ctx, id] { return ctx.store.GetJob(id); });
  if (!job.ok()) co_return Error("not_found", "no job " + std::to_string(id));
  const std::int64_t owner = job.value().owner_uid;
  if (uid == 0 || static_cast<std::int64_t>(uid) == owner) co_return std::nullopt;
  co_return Error("denied", "job " + std::to_string(id) + " belongs to uid " +
                                std::to_string(owner) + "; only its owner or root may " + what +
                                " it");
}

// The handler of a client's request of `kind`.
asio::awaitable<bool> Handle(RequestKind kind, ControlContext& ctx, Socket& socket,
                             const ClientRequest& request) {
  switch (kind) {
    case RequestKind::kVersion: co_return co_await Version(ctx, socket, request);
    case RequestKind::kSubmit: co_return co_await SubmitJob(ctx, socket, request);
    case RequestKind::kStatus: co_return co_await JobStatus(ctx, socket, request);
    case RequestKind::kList: co_return co_await ListJobs(ctx, socket, request);
    case RequestKind::kCancel: co_return co_await CancelJob(ctx, socket, request);
    case RequestKind::kResume: co_return co_await ResumeJob(ctx, socket, request);
    case RequestKind::kRm: co_return co_await RemoveJob(ctx, socket, request);
    case RequestKind::kPrune: co_return co_await PruneJobs(ctx, socket, request);
    case RequestKind::kWait: co_return co_await WaitForJob(ctx, socket, request);
    case RequestKind::kLogs: co_return co_await StreamLogs(ctx, socket, request);
    case RequestKind::kMetrics: co_return co_await Metrics(ctx, socket, request);
    case RequestKind::kCheckpoints: co_return co_await Checkpoints(ctx, socket, request);
    case RequestKind::kNodes: co_return co_await Nodes(ctx, socket, request);
    case RequestKind::kWhy: co_return co_await Why(ctx, socket, request);
    case RequestKind::kCheckpoint: co_return co_await SendCheckpoint(ctx, socket, request);
    case RequestKind::kSettings:
      co_return co_await Settings(ctx, socket, request);
    case RequestKind::kNodeHeartbeat: co_return co_await NodeHeartbeat(ctx, socket, request);
    case RequestKind::kSweepSubmit:
      co_return co_await SubmitSweep(ctx, socket, request);
    case RequestKind::kSweepStatus:
      co_return co_await SweepStatus(ctx, socket, request);
    case RequestKind::kSweepCancel:
      co_return co_await CancelSweep(ctx, socket, request);
    case RequestKind::kSweepBest:
      co_return co_await BestTrial(ctx, socket, request);
    case RequestKind::kSweepList:
      co_return co_await ListSweeps(ctx, socket, request);
    // Not a client's: the server serves them before any client's request (control_server.cc).
    case RequestKind::kSpawnWorker:
    case RequestKind::kWorkerChannel:
    case RequestKind::kWorkerHello:
      break;
  }
  co_return false;
}

}  // namespace

asio::awaitable<bool> ServeClientRequest(ControlContext& ctx, Socket& socket,
                                         const json& request, const RequestRow* row,
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
    const json unknown = Error("bad_request", type.empty()
                                                  ? "a request needs \"type\""
                                                  : "unknown request type '" + type + "'");
    co_return co_await WriteJson(socket, unknown);
  }
  if (const std::optional<std::string> missing = MissingField(*row, request)) {
    const json reply_ = Error("bad_request", *missing);
    co_return co_await WriteJson(socket, reply_);
  }
  const std::int64_t id = IntField(request, "id").value_or(0);
  Owner acting;
  if (row->acts_for_user) {
    Result<Owner> who = ActingUser(request, caller, ctx.cluster.allow_root);
    if (!who.ok()) {
      const json reply_ = Error("denied", who.status().message());
      co_return co_await WriteJson(socket, reply_);
    }
    acting = who.value();
  }
  if (!row->owner_only.empty()) {
    const std::string what(row->owner_only);
    std::optional<json> refused = co_await OwnerOnly(ctx, id, acting.uid, what);
    if (refused) co_return co_await WriteJson(socket, *refused);
  }
  const ClientRequest checked{request, id, acting};
  co_return co_await Handle(row->kind, ctx, socket, checked);
}

}  // namespace dtrain::server
