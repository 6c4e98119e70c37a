#include "daemon/server/supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>

#include "core/unique_fd.h"
#include "daemon/server/line_cutter.h"

namespace dtrain::server {

struct Supervisor::Impl {
  // One pipe (stdout or stderr) of a process, read until EOF.
  struct Stream {
    Stream(asio::io_context& io_context, int fd, std::string stream_name, std::size_t max_line)
        : descriptor(io_context, fd), name(std::move(stream_name)), lines(max_line) {}
    asio::posix::stream_descriptor descriptor;
    std::string name;
    std::array<char, 8192> buffer{};
    LineCutter lines;
    bool open = true;
  };

  struct Process {
    pid_t pid = 0;
    std::unique_ptr<Stream> out, err;
    LineHandler on_line;
    ExitHandler on_exit;
    std::optional<ProcessExit> exit;
    std::unique_ptr<asio::steady_timer> kill_timer;
  };

  Impl(asio::io_context& io_context, std::size_t max_line_bytes)
      : io(io_context), children(io_context, SIGCHLD), max_line(max_line_bytes) {
    WaitForChildren();
  }

  void WaitForChildren() {
    children.async_wait([this](const std::error_code& ec, int) {
      if (ec) return;  // cancelled: shutting down
      Reap();
      WaitForChildren();
    });
  }

  void Reap() {
    for (;;) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return;
      auto it = processes.find(pid);
      if (it == processes.end()) continue;
      ProcessExit exit;
      if (WIFEXITED(status)) exit.exit_status = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) exit.signal = WTERMSIG(status);
      it->second.exit = exit;
      if (it->second.kill_timer) it->second.kill_timer->cancel();
      MaybeFinish(pid);
    }
  }

  void Read(pid_t pid, Stream& stream) {
    stream.descriptor.async_read_some(
        asio::buffer(stream.buffer), [this, pid, &stream](const std::error_code& ec, std::size_t n) {
          auto it = processes.find(pid);
          if (it == processes.end()) return;
          Process& p = it->second;
          const LineCutter::Sink deliver = [&p, &stream](std::string_view line) {
            p.on_line(stream.name, line);
          };
          if (ec || n == 0) {
            stream.lines.Finish(deliver);
            stream.open = false;
            MaybeFinish(pid);
            return;
          }
          stream.lines.Feed(std::string_view(stream.buffer.data(), n), deliver);
          Read(pid, stream);
        });
  }

  // Calls on_exit once the process is reaped and both pipes reached EOF.
  void MaybeFinish(pid_t pid) {
    auto it = processes.find(pid);
    if (it == processes.end()) return;
    Process& p = it->second;
    if (!p.exit || p.out->open || p.err->open) return;
    ExitHandler on_exit = std::move(p.on_exit);
    const ProcessExit exit = *p.exit;
    processes.erase(it);
    on_exit(exit);
  }

  asio::io_context& io;
  asio::signal_set children;
  std::size_t max_line;
  std::map<pid_t, Process> processes;
};

Supervisor::Supervisor(asio::io_context& io, std::size_t max_line)
    : impl_(std::make_unique<Impl>(io, max_line)) {}

Supervisor::~Supervisor() {
  for (auto& [pid, process] : impl_->processes) {
    if (!process.exit) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
}

std::size_t Supervisor::running() const { return impl_->processes.size(); }

Result<pid_t> Supervisor::Spawn(const Launch& launch, LineHandler on_line, ExitHandler on_exit) {
  const auto pipe_failed = [] {
    return Status::Error(std::string("pipe: ") + std::strerror(errno));
  };
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return pipe_failed();
  UniqueFd out_read(out[0]), out_write(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) return pipe_failed();
  UniqueFd err_read(err[0]), err_write(err[1]);
  Result<pid_t> started = StartProcess(launch, out_write.get(), err_write.get());
  out_write.reset();  // the child's ends: only the child writes to them
  err_write.reset();
  if (!started.ok()) return started;
  const pid_t pid = started.value();
  Impl::Process& p = impl_->processes[pid];
  p.pid = pid;
  p.out = std::make_unique<Impl::Stream>(impl_->io, out_read.release(), "stdout", impl_->max_line);
  p.err = std::make_unique<Impl::Stream>(impl_->io, err_read.release(), "stderr", impl_->max_line);
  p.on_line = std::move(on_line);
  p.on_exit = std::move(on_exit);
  impl_->Read(pid, *p.out);
  impl_->Read(pid, *p.err);
  // A child that exited before the SIGCHLD handler saw it is picked up here.
  impl_->Reap();
  return pid;
}

void Supervisor::Stop(pid_t pid, std::chrono::milliseconds grace) {
  auto it = impl_->processes.find(pid);
  if (it == impl_->processes.end() || it->second.exit) return;
  ::kill(-pid, SIGTERM);
  auto& timer = it->second.kill_timer;
  timer = std::make_unique<asio::steady_timer>(impl_->io, grace);
  timer->async_wait([this, pid](const std::error_code& ec) {
    if (ec) return;
    auto found = impl_->processes.find(pid);
    if (found != impl_->processes.end() && !found->second.exit) ::kill(-pid, SIGKILL);
  });
}

void Supervisor::Kill(pid_t pid) {
  auto it = impl_->processes.find(pid);
  if (it == impl_->processes.end() || it->second.exit) return;
  ::kill(-pid, SIGKILL);
}

}  // namespace dtrain::server
