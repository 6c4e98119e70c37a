// dtrain checkpoints: a job's checkpoints (step, time, size, checksum), from the daemon or from
// a store file (--db).
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/daemon_client.h"
#include "cmd/exit_codes.h"
#include "cmd/human.h"
#include "cmd/json_fields.h"
#include "cmd/stored_job.h"
#include "cmd/terminal.h"
#include "cmd/text_table.h"
#include "daemon/store/checkpoint.h"

namespace dtrain::cli {
namespace {

struct CheckpointsArgs {
  std::int64_t job = 0;
  std::string db;  // empty: ask the daemon
  bool json = false;
};

CliResult<std::vector<store::CheckpointInfo>> FromStore(const CheckpointsArgs& args) {
  CliResult<std::unique_ptr<store::Store>> store = OpenStoreWithJob(args.db, args.job);
  if (!store.ok()) return store.error();
  auto infos = store.value()->Checkpoints(args.job);
  if (!infos.ok()) return ErrorFrom(infos.status());
  return std::move(infos).value();
}

// The checksum as a number, or as the "0x..." text FormatChecksum writes.
std::uint32_t ParseChecksum(const nlohmann::json& checkpoint) {
  const std::string text = JsonString(checkpoint, "checksum");
  if (!text.empty()) return static_cast<std::uint32_t>(std::strtoul(text.c_str(), nullptr, 16));
  return static_cast<std::uint32_t>(JsonInt(checkpoint, "checksum"));
}

CliResult<std::vector<store::CheckpointInfo>> FromDaemon(const CheckpointsArgs& args,
                                                         const GlobalOptions& globals) {
  CliResult<DaemonClient> client = DaemonClient::Connect(globals);
  if (!client.ok()) return client.error();
  CliResult<nlohmann::json> reply =
      client.value().Request({{"type", "checkpoints"}, {"id", args.job}});
  if (!reply.ok()) return reply.error();
  std::vector<store::CheckpointInfo> infos;
  for (const nlohmann::json& c : JsonArray(reply.value(), "checkpoints")) {
    infos.push_back({.step = JsonInt(c, "step"),
                     .time = JsonNumber(c, "time"),
                     .bytes = JsonInt(c, "bytes"),
                     .checksum = ParseChecksum(c)});
  }
  return infos;
}

int Checkpoints(const CheckpointsArgs& args, const GlobalOptions& globals) {
  CliResult<std::vector<store::CheckpointInfo>> infos =
      args.db.empty() ? FromDaemon(args, globals) : FromStore(args);
  if (!infos.ok()) return Report(infos.error());
  if (args.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const store::CheckpointInfo& c : infos.value()) {
      out.push_back({{"step", c.step},
                     {"time", c.time},
                     {"bytes", c.bytes},
                     {"checksum", store::FormatChecksum(c.checksum)}});
    }
    std::cout << out.dump() << std::endl;
    return kExitOk;
  }
  if (infos.value().empty()) {
    std::cerr << "job " << args.job << " has no checkpoints\n";
    return kExitOk;
  }
  TextTable table({"STEP", "TIME", "SIZE", "CHECKSUM"}, {true, false, true});
  for (const store::CheckpointInfo& c : infos.value()) {
    table.AddRow({{std::to_string(c.step)},
                  {FormatLocalTime(c.time)},
                  {FormatBytes(c.bytes)},
                  {store::FormatChecksum(c.checksum)}});
  }
  table.Print(std::cout, ColorOnStdout());
  return kExitOk;
}

}  // namespace

void AddCheckpointsCommand(CLI::App& app, Globals globals, int& exit_code) {
  auto args = std::make_shared<CheckpointsArgs>();
  CLI::App* cmd = app.add_subcommand("checkpoints", "List a job's checkpoints, oldest first");
  cmd->add_option("job", args->job, "The job id")->required();
  cmd->add_flag("--json", args->json,
                "Print an array of {step, time, bytes, checksum} (checksum as \"0x...\")");
  cmd->add_option("--db", args->db, "Read this store file instead of asking the daemon")
      ->type_name("PATH");
  cmd->callback([args, globals, &exit_code] { exit_code = Checkpoints(*args, *globals); });
}

}  // namespace dtrain::cli
