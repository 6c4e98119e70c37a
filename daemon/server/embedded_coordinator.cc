#include "daemon/server/embedded_coordinator.h"

#include "core/net/host_info.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_awaitable.hpp>
#include <filesystem>

#include "core/net/host_info.h"
#include "daemon/server/control_server.h"
#include "daemon/server/job_manager.h"
#include "daemon/server/supervisor.h"

namespace dtrain::server {
namespace {

using namespace std::chrono_literals;

// A fresh private directory for the socket, removed with everything in it at the end.
class PrivateDirectory {
 public:
  static Result<PrivateDirectory> Make() {
    const char* base = std::getenv("XDG_RUNTIME_DIR");
    std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") +
                          "/dtrain-run-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      return Status::Error("cannot create a directory for the job's socket in " + pattern);
    }
    return PrivateDirectory(pattern);
  }
  PrivateDirectory(PrivateDirectory&& other) noexcept : path_(std::move(other.path_)) {
    other.path_.clear();
  }
  PrivateDirectory& operator=(PrivateDirectory&&) = delete;
  ~PrivateDirectory() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  explicit PrivateDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace

Result<store::JobState> RunJobWithWorkers(std::int64_t job_id, store::Store& store,
                                          const EmbeddedOptions& options) {
  Result<PrivateDirectory> dir = PrivateDirectory::Make();
  if (!dir.ok()) return dir.status();
  ::signal(SIGPIPE, SIG_IGN);  // a vanished worker is an error code, not a signal

  ManagerSettings settings;
  settings.max_jobs = 1;
  settings.cores = net::OnlineCores();
  settings.grace = options.grace;
  settings.max_restarts = 0;  // in the foreground, a failure is reported, not retried
  settings.socket_path = dir.value().path() + "/control.sock";
  settings.worker_exe = options.worker_exe;
  if (options.on_line) {
    settings.on_line = [&options](std::int64_t, int rank, std::string_view stream,
                                  std::string_view line) { options.on_line(rank, stream, line); };
  }

  asio::io_context io;
  asio::thread_pool pool(2);
  Status outcome;
  {
    Supervisor supervisor(io);
    JobManager jobs(io, pool, store, supervisor, settings);
    ControlServer server(io, pool, store, jobs, settings.socket_path, 0600);
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
