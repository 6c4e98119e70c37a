#include "daemon/worker/worker_command.h"

#include <CLI/CLI.hpp>

namespace dtrain::worker {

CLI::App* AddWorkerCommand(CLI::App& app, WorkerArgs& args) {
  CLI::App* worker = app.add_subcommand("worker", "Internal: a job's worker process");
  worker->group("");  // hidden
  worker->add_option("--job", args.job)->required();
  worker->add_option("--rank", args.rank)->required();
  worker->add_option("--parent", args.parent);
  worker->add_option("--data-host", args.data_host);
  worker->add_option("--connect", args.connect);
  return worker;
}

}  // namespace dtrain::worker
