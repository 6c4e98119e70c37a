#include "cmd/follow.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>

#include "cmd/job_view.h"
#include "cmd/json_fields.h"
#include "cmd/interrupt.h"
#include "cmd/progress.h"
#include "cmd/terminal.h"
#include "daemon/server/control_request.h"
#include "daemon/store/job_views.h"

namespace dtrain::cli {

namespace {

// Prints one log line where it was written (stdout or stderr), with its rank once the job has
// shown lines of several; a progress bar, if any, stays below them.
class LinePrinter {
 public:
  explicit LinePrinter(const LogQuery& query, FollowBar* bar = nullptr)
      : query_(query), prefix_(query.prefix_ranks), bar_(bar) {}
  void Print(std::int64_t rank, const std::string& stream, const std::string& line) {
    if (bar_ != nullptr) bar_->Clear();
    if (!query_.worker && rank != 0) prefix_ = true;
    std::string text;
    if (prefix_) text.append("r").append(std::to_string(rank)).append(": ");
    text += Printable(line);  // a job's bytes, which may be read by someone else (root)
    text += '\n';
    std::FILE* out = stream == "stderr" ? stderr : stdout;
    std::fwrite(text.data(), 1, text.size(), out);
  }
  void Flush() {
    std::fflush(stdout);
    std::fflush(stderr);
    if (bar_ != nullptr) bar_->Redraw();
  }

 private:
  const LogQuery& query_;
  bool prefix_;
  FollowBar* bar_;
};

}  // namespace

CliResult<nlohmann::json> StreamLogs(DaemonClient& client, const LogQuery& query) {
  nlohmann::json request = {{"type", "logs"}, {"id", query.job}, {"follow", query.follow}};
  if (query.worker) request["worker"] = *query.worker;
  if (query.tail) request["tail"] = *query.tail;
  if (query.since) request["since"] = *query.since;
  const bool bar_wanted = query.follow && query.progress_bar;
  if (bar_wanted) request["progress"] = true;
  if (std::optional<CliError> failed = client.Send(std::move(request))) return *failed;
  const Patience patience = query.follow ? Patience::kUntilEnd : Patience::kRequest;
  FollowBar bar;
  LinePrinter printer(query, bar_wanted ? &bar : nullptr);
  for (;;) {
    CliResult<nlohmann::json> frame = client.ReadStreamFrame(patience);
    if (!frame.ok()) {
      bar.Clear();
      return frame;
    }
    if (const nlohmann::json* progress = JsonField(frame.value(), "progress");
        bar_wanted && progress != nullptr && progress->is_object()) {
      bar.Update(*progress);
    }
    for (const nlohmann::json& line : JsonArray(frame.value(), "lines")) {
      printer.Print(JsonInt(line, "worker"), JsonString(line, "stream"), JsonString(line, "line"));
    }
    printer.Flush();
    const nlohmann::json* end = JsonField(frame.value(), "end");
    if (end != nullptr && end->is_boolean() && end->get<bool>()) {
      bar.Clear();
      return JsonObject(frame.value(), "job");
    }
  }
}

CliResult<nlohmann::json> StreamStoredLogs(store::Store& store, const LogQuery& query) {
  constexpr std::size_t kRead = 100000;  // lines read from the store at a time
  LinePrinter printer(query);
  std::int64_t after = 0;
  bool first = true;
  for (;;) {
    // The state is read before the lines: a job turns terminal only once its lines are
    // committed, so the lines read after an ended state are the last.
    Result<store::JobRecord> job = store.GetJob(query.job);
    if (!job.ok()) return ErrorFrom(job.status(), kExitNotFound);
    const bool ended = store::IsTerminal(job.value().state);
    for (;;) {
      Result<std::vector<store::LogRow>> rows = store.Logs(query.job, after, kRead);
      if (!rows.ok()) return ErrorFrom(rows.status());
      const std::size_t read = rows.value().size();
      for (const store::LogRow& row :
           server::SelectLines(rows.value(), &after, query.worker, query.since.value_or(0.0),
                               first ? query.tail : std::nullopt)) {
        printer.Print(row.worker, row.stream, row.line);
      }
      first = false;
      if (read < kRead) break;
    }
    printer.Flush();
    if (!query.follow || ended) break;
    if (StopRequested()) return CliError{kExitInterrupted, "interrupted", "interrupted", {}};
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  Result<nlohmann::json> job = store::StoredJobJson(store, query.job, false);
  if (!job.ok()) return ErrorFrom(job.status());
  return std::move(job).value();
}

CliResult<nlohmann::json> WaitForJob(DaemonClient& client, std::int64_t job) {
  CliResult<nlohmann::json> reply =
      client.Request({{"type", "wait"}, {"id", job}}, Patience::kUntilEnd);
  if (!reply.ok()) return reply;
  return JsonObject(reply.value(), "job");
}

int FinishFollowing(const nlohmann::json& job, bool json) {
  const JobInfo info = ParseJob(job);
  if (json) {
    std::cout << job.dump() << std::endl;
  } else {
    PrintJobResult(info, std::cout, ColorOnStdout());
  }
  return ExitCodeForState(info.state);
}

int FollowQueuedJob(DaemonClient& client, const nlohmann::json& job, const QueuedJob& how) {
  const std::int64_t id = JsonInt(job, "id");
  if (how.no_wait) {
    if (how.json) {
      std::cout << job.dump() << std::endl;
    } else {
      std::cout << id << std::endl;
    }
    return kExitOk;
  }
  std::cerr << "dtrain: " << how.what << " job " << id << " (" << JsonString(job, "name")
            << ") to " << client.socket_path() << "; Ctrl-C stops following it\n";
  InstallStopHandlers();
  LogQuery query;
  query.job = id;
  query.follow = true;
  query.prefix_ranks = how.prefix_ranks;
  query.progress_bar = StderrIsTty();
  // A resumed job's earlier attempts printed before it was queued again.
  if (const auto updated = job.find("updated"); updated != job.end() && updated->is_number()) {
    query.since = updated->get<double>();
  }
  CliResult<nlohmann::json> ended =
      how.json ? WaitForJob(client, id) : StreamLogs(client, query);
  if (!ended.ok()) return ReportFollowError(ended.error(), id);
  return FinishFollowing(ended.value(), how.json);
}

int ReportFollowError(const CliError& error, std::int64_t job) {
  if (error.exit_code != kExitInterrupted) return Report(error);
  const std::string id = std::to_string(job);
  std::cerr << "\ndtrain: stopped following job " << id << "; it keeps running (dtrain logs -f "
            << id << ", dtrain wait " << id << ", dtrain cancel " << id << ")\n";
  return kExitInterrupted;
}

}  // namespace dtrain::cli
