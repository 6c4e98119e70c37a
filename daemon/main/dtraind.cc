// dtraind: the dtrain daemon (see man/dtraind.8), and `dtraind worker ...`, the worker process it
// starts for each job (internal: never started by hand).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "config/daemon_config.h"
#include "core/math/blas_kernels.h"
#include "daemon/server/daemon.h"
#include "daemon/worker/remote_worker.h"
#include "daemon/worker/slurm_task.h"
#include "daemon/worker/worker_command.h"

namespace {

constexpr int kExitUsage = 2;

std::string SelfExe(const char* argv0) {
  char path[PATH_MAX] = {};
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n > 0) return std::string(path, static_cast<std::size_t>(n));
  return std::filesystem::absolute(argv0).string();
}

// The daemon itself, with the command line's overrides of its configuration.
int Serve(const std::string& config_path, const std::string& socket,
          const std::string& state_dir, int max_jobs, int cores, const char* argv0) {
  dtrain::config::DaemonConfigLoad loaded =
      !config_path.empty() && std::filesystem::exists(config_path)
          ? dtrain::config::LoadDaemonConfig(config_path)
          : dtrain::config::ParseDaemonConfigText("", "defaults");
  if (!loaded.ok()) {
    for (const auto& d : loaded.diagnostics) std::cerr << dtrain::config::FormatDiagnostic(d) << '\n';
    return kExitUsage;
  }
  dtrain::config::DaemonConfig config = *loaded.config;
  if (!socket.empty()) config.socket = std::filesystem::absolute(socket).string();
  if (!state_dir.empty()) config.state_dir = std::filesystem::absolute(state_dir).string();
  if (max_jobs > 0) config.max_jobs = max_jobs;
  if (cores >= 0) config.cores = cores;
  return dtrain::server::RunDaemon({config, config_path, SelfExe(argv0)});
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::math::UseBestBlasKernels();
  CLI::App app("dtraind: the dtrain daemon. Queues and supervises training jobs; see dtraind(8).",
               "dtraind");
  app.set_version_flag("--version", "dtraind 0.1.0");
  std::string config_path, socket, state_dir;
  int max_jobs = 0, cores = -1;
  app.add_option("--config", config_path,
                 "Daemon configuration file (missing file: defaults)")->type_name("FILE");
  app.add_option("--socket", socket, "Unix control socket (overrides the file)")->type_name("PATH");
  app.add_option("--state-dir", state_dir, "Directory of the store (overrides the file)")
      ->type_name("DIR");
  app.add_option("--max-jobs", max_jobs, "Jobs running at once (overrides the file)")
      ->check(CLI::Range(1, dtrain::config::kMaxJobsLimit));
  app.add_option("--cores", cores, "Cores to hand out, 0 = all (overrides the file)")
      ->check(CLI::Range(0, dtrain::config::kMaxCoresLimit));

  dtrain::worker::WorkerArgs worker;
  CLI::App* worker_cmd = dtrain::worker::AddWorkerCommand(app, worker);
  dtrain::worker::RemoteWorkerArgs remote;
  CLI::App* remote_cmd = dtrain::worker::AddRemoteWorkerCommand(app, remote);
  dtrain::worker::SlurmTaskArgs slurm_task;
  CLI::App* slurm_task_cmd = dtrain::worker::AddSlurmTaskCommand(app, slurm_task);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  if (*worker_cmd) return dtrain::worker::WorkerMain(worker);
  if (*remote_cmd) return dtrain::worker::RemoteWorkerMain(remote);
  if (*slurm_task_cmd) return dtrain::worker::SlurmTaskMain(slurm_task);
  try {
    return Serve(config_path, socket, state_dir, max_jobs, cores, argv[0]);
  } catch (const std::bad_alloc&) {
    std::cerr << "dtraind: out of memory while serving; its jobs resume at the next start"
              << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "dtraind: cannot go on: " << e.what() << "; its jobs resume at the next start"
              << std::endl;
  }
  std::_Exit(1);  // not through destructors of what was half built; the store is crash-safe
}
