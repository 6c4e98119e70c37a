#include "daemon/server/embedded_coordinator.h"

#include <signal.h>
#include <unistd.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_awaitable.hpp>

#include "config/daemon_config.h"
#include "core/net/host_info.h"
#include "daemon/server/control_server.h"
#include "daemon/server/job_manager.h"
#include "daemon/server/supervisor.h"

namespace dtrain::server {

using namespace std::chrono_literals;

Result<store::JobState> RunJobWithWorkers(std::int64_t job_id, store::Store& store,
                                          const EmbeddedOptions& options) {
  ::signal(SIGPIPE, SIG_IGN);  // a vanished worker is an error code, not a signal

  ManagerSettings settings;
  settings.max_jobs = 1;
  settings.cores = net::OnlineCores();
  settings.grace = options.grace;
  settings.max_restarts = 0;  // in the foreground, a failure is reported, not retried
  settings.worker_exe = options.worker_exe;
  if (options.on_line) {
    settings.on_line = [&options](std::int64_t, int rank, std::string_view stream,
                                  std::string_view line) { options.on_line(rank, stream, line); };
  }

  asio::io_context io;
  asio::thread_pool pool(2);
  Status outcome;
  {
    Supervisor supervisor(io, config::kDefaultMaxLogLine);
    JobManager jobs(io, pool, store, supervisor, settings);
    ControlServer server(io, pool, store, jobs, "", 0);  // worker channels only
    if (Status listening = server.Listen(); !listening.ok()) return listening;
    server.Start();
    auto main = [&]() -> asio::awaitable<void> {
      outcome = co_await jobs.Adopt(job_id);
      asio::steady_timer tick(io);
      bool cancelling = false;
      while (outcome.ok() && jobs.Active(job_id)) {
        if (!cancelling && options.stop != nullptr && options.stop->load()) {
          cancelling = true;
          const uid_t uid = ::getuid();
          asio::co_spawn(io, jobs.Cancel(job_id, uid), asio::detached);
        }
        tick.expires_after(50ms);
        co_await tick.async_wait(asio::use_awaitable);
      }
      server.Close();
      io.stop();
    };
    asio::co_spawn(io, main, asio::detached);
    io.run();
  }
  pool.join();
  if (!outcome.ok()) return outcome;
  if (Status flushed = store.Flush(); !flushed.ok()) return flushed;
  auto record = store.GetJob(job_id);
  if (!record.ok()) return record.status();
  return record.value().state;
}

}  // namespace dtrain::server
