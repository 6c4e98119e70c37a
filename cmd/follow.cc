#include "cmd/follow.h"

#include <cstdio>
#include <iostream>

#include "cmd/job_view.h"
#include "cmd/json_fields.h"
#include "cmd/terminal.h"

namespace dtrain::cli {

CliResult<nlohmann::json> StreamLogs(DaemonClient& client, const LogQuery& query) {
  nlohmann::json request = {{"type", "logs"}, {"id", query.job}, {"follow", query.follow}};
  if (query.worker) request["worker"] = *query.worker;
  if (query.tail) request["tail"] = *query.tail;
  if (query.since) request["since"] = *query.since;
  if (std::optional<CliError> failed = client.Send(std::move(request))) return *failed;
  const Patience patience = query.follow ? Patience::kUntilEnd : Patience::kRequest;
  bool prefix = query.prefix_ranks;
  for (;;) {
    CliResult<nlohmann::json> frame = client.ReadStreamFrame(patience);
    if (!frame.ok()) return frame;
    for (const nlohmann::json& line : JsonArray(frame.value(), "lines")) {
      const std::int64_t rank = JsonInt(line, "worker");
      if (!query.worker && rank != 0) prefix = true;
      std::string text;
      if (prefix) text.append("r").append(std::to_string(rank)).append(": ");
      text += JsonString(line, "line");
      text += '\n';
      std::FILE* out = JsonString(line, "stream") == "stderr" ? stderr : stdout;
      std::fwrite(text.data(), 1, text.size(), out);
    }
    std::fflush(stdout);
    std::fflush(stderr);
    const nlohmann::json* end = JsonField(frame.value(), "end");
    if (end != nullptr && end->is_boolean() && end->get<bool>()) {
      return JsonObject(frame.value(), "job");
    }
  }
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

int ReportFollowError(const CliError& error, std::int64_t job) {
  if (error.exit_code != kExitInterrupted) return Report(error);
  const std::string id = std::to_string(job);
  std::cerr << "\ndtrain: stopped following job " << id << "; it keeps running (dtrain logs -f "
            << id << ", dtrain wait " << id << ", dtrain cancel " << id << ")\n";
  return kExitInterrupted;
}

}  // namespace dtrain::cli
