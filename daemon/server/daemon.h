// RunDaemon: dtraind's main loop — opens the store, binds the control socket, reconciles what
// the previous daemon left, tells systemd it is ready, serves until SIGTERM/SIGINT, then stops
// every worker (they checkpoint; their jobs resume at the next start) and returns.
//
//   int code = RunDaemon({config, "/etc/dtrain/dtraind.toml", "/usr/local/bin/dtraind"});
//
// systemd (Type=notify): READY=1 once the store is open and the socket bound; STATUS= with the
// running and queued counts; WATCHDOG=1 at half of WatchdogSec= when it is set; STOPPING=1 on
// SIGTERM; RELOADING=1 around SIGHUP, which re-reads the config file (max_jobs, cores,
// log_level, grace_seconds, max_restarts) without touching running jobs.
// Call once per process, from the main thread.
#pragma once

#include <string>

#include "config/daemon_config.h"

namespace dtrain::server {

struct DaemonOptions {
  config::DaemonConfig config;
  std::string config_path;  // re-read on SIGHUP; empty: nothing to re-read
  std::string worker_exe;   // this dtraind binary, started as `dtraind worker ...`
};

// Exit status: 0 after a clean stop, 1 when the daemon cannot start or fails at run time.
int RunDaemon(const DaemonOptions& options);

}  // namespace dtrain::server
