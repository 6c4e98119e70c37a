#include "daemon/server/request_handlers.h"

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/server/control_request.h"
#include "daemon/store/job_removal.h"
#include "daemon/store/job_views.h"

namespace dtrain::server {
namespace {

using json = nlohmann::json;
using store::JobState;

// The refusal's error, or else the job's reply (after a change the manager accepted).
asio::awaitable<json> JobReplyUnless(ControlContext& ctx, std::optional<Refusal> refused,
                                     std::int64_t id) {
  if (refused) co_return Error(*refused);
  co_return co_await ctx.JobReply(id);
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
      Result<JobState> state =
          store::ParseEndedState(name.is_string() ? name.get<std::string>() : "");
      if (!state.ok()) return state.status();
      filter.states.push_back(state.value());
    }
  }
  if (caller != 0) filter.owner = static_cast<std::int64_t>(caller);
  return filter;
}

}  // namespace

asio::awaitable<bool> SubmitJob(ControlContext& ctx, Socket& socket, const ClientRequest& request) {
  auto text = StringField(request.body, "job_toml");
  if (!text) {
    const json reply_ = Error("bad_request", "submit needs \"job_toml\" (a string)");
    co_return co_await WriteJson(socket, reply_);
  }
  const std::string source = StringField(request.body, "source").value_or("job.toml");
  std::optional<int> priority;
  if (auto p = IntField(request.body, "priority")) priority = static_cast<int>(*p);
  const std::optional<std::string> name = StringField(request.body, "name");
  Submitted s = co_await ctx.jobs.Submit(*text, source, request.acting, name, priority);
  if (s.refusal) {
    const json reply_ = Error(*s.refusal);
    co_return co_await WriteJson(socket, reply_);
  }
  const json reply_ = co_await ctx.JobReply(s.id);
  co_return co_await WriteJson(socket, reply_);
}

asio::awaitable<bool> CancelJob(ControlContext& ctx, Socket& socket, const ClientRequest& request) {
  const json reply_ = co_await JobReplyUnless(
      ctx, co_await ctx.jobs.Cancel(request.id, request.acting.uid), request.id);
  co_return co_await WriteJson(socket, reply_);
}

asio::awaitable<bool> ResumeJob(ControlContext& ctx, Socket& socket, const ClientRequest& request) {
  const std::optional<std::vector<std::string>> overrides = StringsField(request.body, "set");
  if (!overrides) {
    const json reply_ = Error("bad_request", "resume's \"set\" is a list of KEY=VALUE strings");
    co_return co_await WriteJson(socket, reply_);
  }
  const json reply_ = co_await JobReplyUnless(
      ctx, co_await ctx.jobs.Resume(request.id, request.acting.uid, *overrides), request.id);
  co_return co_await WriteJson(socket, reply_);
}

asio::awaitable<bool> RemoveJob(ControlContext& ctx, Socket& socket, const ClientRequest& request) {
  const json reply_ = RemovedReply(co_await ctx.jobs.Remove(request.id, request.acting.uid), false);
  co_return co_await WriteJson(socket, reply_);
}

asio::awaitable<bool> PruneJobs(ControlContext& ctx, Socket& socket, const ClientRequest& request) {
  Result<store::PruneFilter> filter = PruneFilterOf(request.body, request.acting.uid);
  if (!filter.ok()) {
    const json reply_ = Error("bad_request", filter.status().message());
    co_return co_await WriteJson(socket, reply_);
  }
  const bool dry_run = BoolField(request.body, "dry_run");
  const json reply_ = RemovedReply(co_await ctx.jobs.Prune(filter.value(), dry_run), dry_run);
  co_return co_await WriteJson(socket, reply_);
}

}  // namespace dtrain::server
