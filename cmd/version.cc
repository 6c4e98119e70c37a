// dtrain version: this client's version, the OpenBLAS kernels it runs and what runs its matrix
// products (math::DescribeGemm) and, when one is reachable, its daemon's version.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/daemon_client.h"
#include "cmd/exit_codes.h"
#include "cmd/json_fields.h"
#include "core/math/blas_kernels.h"
#include "core/math/gemm.h"
#include "core/net/frame.h"

namespace dtrain::cli {
namespace {

int Version(bool json, const GlobalOptions& globals) {
  const nlohmann::json client = {
      {"version", kVersion},
      {"protocol", net::kProtocolVersion},
      {"blas", math::BlasCoreName()},
      {"gemm", math::CurrentGemmBackend() == math::GemmBackend::kOnednn ? "onednn" : "openblas"}};
  nlohmann::json daemon;  // null: none reachable
  std::string why_not;
  CliResult<DaemonClient> connection = DaemonClient::Connect(globals);
  if (connection.ok()) {
    CliResult<nlohmann::json> reply = connection.value().Request({{"type", "version"}});
    if (reply.ok()) {
      daemon = {{"version", JsonString(reply.value(), "version")},
                {"protocol", JsonInt(reply.value(), "protocol")},
                {"pid", JsonInt(reply.value(), "pid")},
                {"socket", connection.value().socket_path()}};
    } else {
      why_not = reply.error().message;
    }
  }
  if (json) {
    std::cout << nlohmann::json{{"client", client}, {"daemon", daemon}}.dump() << std::endl;
    return kExitOk;
  }
  std::cout << "dtrain " << kVersion << " (protocol " << net::kProtocolVersion
            << ", OpenBLAS kernels " << math::BlasCoreName() << ")\n"
            << math::DescribeGemm() << '\n';
  if (daemon.is_null()) {
    std::cout << "daemon: not running" << (why_not.empty() ? "" : " (" + why_not + ")") << '\n';
  } else {
    std::cout << "daemon: dtraind " << daemon["version"].get<std::string>() << " (protocol "
              << daemon["protocol"].get<std::int64_t>() << ", pid "
              << daemon["pid"].get<std::int64_t>() << ", " << connection.value().socket_path()
              << ")\n";
  }
  return kExitOk;
}

}  // namespace

void AddVersionCommand(CLI::App& app, Globals globals, int& exit_code) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("version", "Print the client's and the daemon's versions");
  cmd->add_flag("--json", *json, "Print {\"client\": {...}, \"daemon\": {...} or null}");
  cmd->callback([json, globals, &exit_code] { exit_code = Version(*json, *globals); });
}

}  // namespace dtrain::cli
