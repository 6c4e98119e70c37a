#include "daemon/worker/worker_command.h"

#include <CLI/CLI.hpp>

namespace dtrain::worker {

CLI::App* AddWorkerCommand(CLI::App& app, WorkerArgs& args) {
  CLI::App* worker = app.add_subcommand("worker", "Internal: a job's worker process");
  worker->group("");  // hidden
  CLI::Option* socket = worker->add_option("--socket", args.socket);
  CLI::Option* coordinator = worker->add_option("--coordinator", args.coordinator);
  socket->excludes(coordinator);
  coordinator->excludes(socket);
  worker->add_option("--key-file", args.key_file)->needs(coordinator);
  worker->add_option("--job", args.job)->required();
  worker->add_option("--rank", args.rank)->required();
  worker->add_option("--token", args.token)->required();
  worker->add_option("--parent", args.parent)->required();
  worker->add_option("--data-host", args.data_host);
  return worker;
}

}  // namespace dtrain::worker
