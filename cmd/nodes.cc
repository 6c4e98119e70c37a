// dtrain nodes: the daemon's view of its cluster — itself and each of its [cluster] peers, up or
// down since when, with their cores and jobs as their last heartbeat answer said.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/daemon_client.h"
#include "cmd/exit_codes.h"
#include "cmd/human.h"
#include "cmd/json_fields.h"
#include "cmd/terminal.h"
#include "cmd/text_table.h"

namespace dtrain::cli {
namespace {

std::string StateText(const nlohmann::json& node, double now) {
  const std::string state = JsonString(node, "state");
  if (node.contains("self")) return state + " (this daemon)";
  const nlohmann::json* since = JsonField(node, "since");
  if (since == nullptr || !since->is_number()) return state;
  return state + " since " + FormatAge(since->get<double>(), now);
}

int Nodes(bool json, const GlobalOptions& globals) {
  CliResult<DaemonClient> client = DaemonClient::Connect(globals);
  if (!client.ok()) return Report(client.error());
  CliResult<nlohmann::json> reply = client.value().Request({{"type", "nodes"}});
  if (!reply.ok()) return Report(reply.error());
  const nlohmann::json& nodes = JsonArray(reply.value(), "nodes");
  if (json) {
    std::cout << nodes.dump() << std::endl;
    return kExitOk;
  }
  const double now = UnixNow();
  TextTable table({"NAME", "ADDRESS", "STATE", "CORES", "RUNNING", "QUEUED", "ERROR"},
                  {false, false, false, true, true, true, false});
  for (const nlohmann::json& node : nodes) {
    const bool up = JsonString(node, "state") == "up";
    const bool answered = up || JsonField(node, "last_seen") != nullptr;
    auto count = [&](const char* key) {
      return answered ? std::to_string(JsonInt(node, key)) : std::string("-");
    };
    table.AddRow({{JsonString(node, "name").empty() ? "?" : JsonString(node, "name")},
                  {JsonString(node, "address").empty() ? "-" : JsonString(node, "address")},
                  {StateText(node, now), up ? kGreen : kRed},
                  {count("cores")},
                  {count("running")},
                  {count("queued")},
                  {JsonString(node, "error")}});
  }
  table.Print(std::cout, ColorOnStdout());
  return kExitOk;
}

}  // namespace

void AddNodesCommand(CLI::App& app, Globals globals, int& exit_code) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "nodes", "Show this daemon and its peer daemons: up or down since when, cores, jobs");
  cmd->add_flag("--json", *json,
                "Print the array of nodes: {\"name\", \"address\", \"state\", \"since\", "
                "\"last_seen\", \"cores\", \"running\", \"queued\", \"error\"}");
  cmd->callback([json, globals, &exit_code] { exit_code = Nodes(*json, *globals); });
}

}  // namespace dtrain::cli
