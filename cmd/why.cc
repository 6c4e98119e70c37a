// dtrain why: one screen on what went wrong with a job first (store::DiagnoseJob), from the
// daemon or from a store file (--db), and what to do next.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/daemon_client.h"
#include "cmd/exit_codes.h"
#include "cmd/human.h"
#include "cmd/json_fields.h"
#include "cmd/stored_job.h"
#include "cmd/terminal.h"
#include "daemon/store/job_diagnosis.h"

namespace dtrain::cli {
namespace {

struct WhyArgs {
  std::int64_t job = 0;
  int lines = 10;
  bool json = false;
  std::string db;  // empty: ask the daemon
};

CliResult<nlohmann::json> WhyFromDaemon(const WhyArgs& args, const GlobalOptions& globals) {
  CliResult<DaemonClient> client = DaemonClient::Connect(globals);
  if (!client.ok()) return client.error();
  CliResult<nlohmann::json> reply =
      client.value().Request({{"type", "why"}, {"id", args.job}, {"lines", args.lines}});
  if (!reply.ok()) return reply.error();
  return JsonObject(reply.value(), "why");
}

CliResult<nlohmann::json> WhyFromStore(const WhyArgs& args) {
  CliResult<std::unique_ptr<store::Store>> store = OpenStoreWithJob(args.db, args.job);
  if (!store.ok()) return store.error();
  Result<nlohmann::json> why =
      store::DiagnoseJob(*store.value(), args.job, static_cast<std::size_t>(args.lines));
  if (!why.ok()) return ErrorFrom(why.status());
  return std::move(why).value();
}

std::string Text(const nlohmann::json& value) {
  return Printable(value.is_string() ? value.get<std::string>() : value.dump());
}

void PrintWhy(const WhyArgs& args, const nlohmann::json& why, std::ostream& out, bool color) {
  const std::string id = std::to_string(args.job);
  const std::string state = Text(why["state"]);
  out << "job " << id << " (" << Text(why["name"]) << ") "
      << Paint(color, state == "succeeded" ? kGreen : kBoldRed, state) << " at step "
      << Text(why["step"]) << ": " << Text(why["reason"]) << "\n\n";

  const nlohmann::json& cause = why["cause"];
  out << Paint(color, kBold, "First: ") << Text(cause["summary"]);
  if (cause["time"].is_number()) out << " (" << FormatLocalTime(cause["time"].get<double>()) << ")";
  out << '\n';
  const nlohmann::json& lines = why["last_lines"];
  if (!lines.empty()) {
    out << "  the last lines before it:\n";
    for (const nlohmann::json& l : lines) {
      out << "    r" << Text(l["worker"]) << ": " << Text(l["line"]) << '\n';
    }
  }

  const nlohmann::json& nan = why["non_finite"];
  out << Paint(color, kBold, "Loss: ");
  if (nan.is_null()) {
    out << "finite throughout\n";
  } else {
    out << Text(nan["name"]) << " of worker rank " << Text(nan["worker"])
        << " became non-finite at step " << Text(nan["step"]) << '\n';
  }

  const nlohmann::json& restarts = why["restarts"];
  out << Paint(color, kBold, "Restarts: ") << restarts.size() << '\n';
  for (const nlohmann::json& e : restarts) {
    out << "  " << FormatLocalTime(e["time"].get<double>()) << "  " << Text(e["reason"]) << '\n';
  }

  out << Paint(color, kBold, "Next:") << '\n';
  for (const nlohmann::json& n : why["next"]) out << "  - " << Text(n) << '\n';
  const bool ended = state == "failed" || state == "cancelled";
  if (!why["newest_checkpoint"].is_null()) {
    out << "  - the newest checkpoint is at step " << Text(why["newest_checkpoint"]) << ": ";
    if (ended && !args.db.empty()) {
      out << "resume from it with dtrain run --resume " << id << " --db " << args.db << '\n';
    } else {
      out << "export it with dtrain export " << id << (args.db.empty() ? "" : " --db " + args.db)
          << " -o " << Text(why["name"]) << ".dtm\n";
    }
  }
  out << "  - every line: dtrain logs " << id << (args.db.empty() ? "" : " --db " + args.db)
      << '\n';
}

int Why(const WhyArgs& args, const GlobalOptions& globals) {
  CliResult<nlohmann::json> why =
      args.db.empty() ? WhyFromDaemon(args, globals) : WhyFromStore(args);
  if (!why.ok()) return Report(why.error());
  if (args.json) {
    std::cout << why.value().dump() << std::endl;
  } else {
    PrintWhy(args, why.value(), std::cout, ColorOnStdout());
  }
  return kExitOk;
}

}  // namespace

void AddWhyCommand(CLI::App& app, Globals globals, int& exit_code) {
  auto args = std::make_shared<WhyArgs>();
  CLI::App* cmd = app.add_subcommand(
      "why", "Say what went wrong with a job first: the failed process, its last lines, a "
             "non-finite loss, the restarts, and what to do next");
  cmd->add_option("job", args->job, "The job id")->required();
  cmd->add_option("--lines", args->lines, "How many of the last lines before the cause to show")
      ->type_name("N")
      ->check(CLI::Range(0, 1000));
  cmd->add_flag("--json", args->json, "Print the WHY object (control_protocol.md)");
  cmd->add_option("--db", args->db, "Read this store file instead of asking the daemon")
      ->type_name("PATH");
  cmd->callback([args, globals, &exit_code] { exit_code = Why(*args, *globals); });
}

}  // namespace dtrain::cli
