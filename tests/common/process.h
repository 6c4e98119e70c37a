// Running real processes from tests: run to completion capturing stdout/stderr/exit status, or
// start one in the background to signal it later.
//
//   ProcessResult r = RunProcess({bin, "validate", "bad.toml"}, dir);
//   BOOST_TEST(r.exit_code == 2);
//   ChildProcess child = StartProcess({bin, "run", "job.toml"}, dir);
//   child.Signal(SIGKILL);  int status = child.Wait();
//
// Output goes through files in `dir` (no pipes to fill up). One thread at a time.
#pragma once

#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace dtrain::testing {

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string out;
  std::string err;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class ChildProcess {
 public:
  ChildProcess(pid_t pid, std::string out_path, std::string err_path)
      : pid_(pid), out_path_(std::move(out_path)), err_path_(std::move(err_path)) {}
  ChildProcess(ChildProcess&& other) noexcept
      : pid_(other.pid_), out_path_(other.out_path_), err_path_(other.err_path_) {
    other.pid_ = -1;
  }
  ~ChildProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  // No-op once waited for (kill(-1, ...) would signal every process).
  void Signal(int sig) const {
    if (pid_ > 0) ::kill(pid_, sig);
  }

  ProcessResult Wait() {
    int status = 0;
    if (pid_ <= 0) return ProcessResult{};  // waited for already
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    ProcessResult r;
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    r.out = ReadFile(out_path_);
    r.err = ReadFile(err_path_);
    return r;
  }

 private:
  pid_t pid_;
  std::string out_path_, err_path_;
};

// Starts argv[0] (a path) with stdout/stderr to files in `dir`, stdin from /dev/null.
inline ChildProcess StartProcess(const std::vector<std::string>& args, const std::string& dir) {
  static int counter = 0;
  const std::string stem = dir + "/proc" + std::to_string(counter++);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, (stem + ".out").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, (stem + ".err").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("posix_spawn " + args[0] + " failed");
  return ChildProcess(pid, stem + ".out", stem + ".err");
}

inline ProcessResult RunProcess(const std::vector<std::string>& args, const std::string& dir) {
  return StartProcess(args, dir).Wait();
}

// Moves all of `size` bytes between `data` and `fd` with `io` (::read or ::write); false at end of
// file or on an error.
template <typename Io, typename Byte>
bool TransferAll(Io io, int fd, Byte* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = io(fd, data, size);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Writes all of `size` bytes at `data` to `fd` (a pipe to the parent, say); false if it could not.
inline bool WriteAll(int fd, const void* data, std::size_t size) {
  return TransferAll(::write, fd, static_cast<const char*>(data), size);
}

// Reads exactly `size` bytes from `fd` into `data`; false at end of file (the writer is gone) or
// on an error.
inline bool ReadAll(int fd, void* data, std::size_t size) {
  return TransferAll(::read, fd, static_cast<char*>(data), size);
}

}  // namespace dtrain::testing
