// dtrain keygen PATH: writes a new random cluster key (dtraind.8, [cluster] key_file), mode 0600,
// never over an existing file.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/terminal.h"
#include "core/net/auth.h"

namespace dtrain::cli {

void AddKeygenCommand(CLI::App& app, int& exit_code) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "keygen", "Write a new random cluster key file (mode 0600) for [cluster] key_file");
  cmd->add_option("path", *path, "Where to write it (an existing file is never replaced)")
      ->required();
  cmd->callback([path, &exit_code] {
    if (Status written = net::WriteNewKeyFile(*path); !written.ok()) {
      PrintError(written.message());
      exit_code = kExitFailed;
      return;
    }
    std::cerr << "wrote " << *path
              << ": copy it to every host of the cluster (readable by the daemon's user only)\n";
    exit_code = kExitOk;
  });
}

}  // namespace dtrain::cli
