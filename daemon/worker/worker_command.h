// The hidden `worker` subcommand that starts a job's worker process: `dtraind worker ...` when a
// daemon starts it, `dtrain worker ...` when `dtrain run` coordinates a job of several workers.
// One declaration for both binaries, so the two cannot drift apart.
//
//   WorkerArgs args;
//   CLI::App* worker = AddWorkerCommand(app, args);
//   app.parse(argc, argv);
//   if (*worker) return WorkerMain(args);
//
// Not listed in --help or the completions: only a coordinator starts workers.
#pragma once

#include "daemon/worker/worker_main.h"

namespace CLI {
class App;
}

namespace dtrain::worker {

// `args` must outlive the parse.
CLI::App* AddWorkerCommand(CLI::App& app, WorkerArgs& args);

}  // namespace dtrain::worker
