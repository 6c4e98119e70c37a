// A real dtraind for a test: started as its own process on a socket and state directory in a
// temporary folder, spoken to over the control protocol, stopped (SIGTERM) or killed (SIGKILL)
// on demand, and always gone when the fixture is.
//
//   DaemonFixture daemon;                      // started and accepting
//   nlohmann::json reply = daemon.Request({{"type", "version"}});
//   std::int64_t id = daemon.Submit(kJobText);
//   nlohmann::json job = daemon.Wait(id);      // the JOB object once it ended
//
// One thread at a time per fixture; Request opens a connection per call, so threads may each
// call it concurrently.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "core/net/frame_stream.h"
#include "integration/worker_processes.h"

namespace dtrain::testing {

// A port nothing listens on right now (the kernel's pick for a socket closed at once).
inline std::uint16_t FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

inline std::string EnvPath(const char* name) {
  const char* value = std::getenv(name);
  BOOST_REQUIRE_MESSAGE(value != nullptr, name << " is not set (run through ctest)");
  return value;
}

// The live processes whose command line contains each of `needles` (a zombie is gone for our
// purposes).
inline std::vector<pid_t> ProcessesRunning(const std::vector<std::string>& needles) {
  std::vector<pid_t> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string proc = entry.path().string();
    const std::string cmdline = CommandLineOf(proc);
    const bool matches = std::all_of(needles.begin(), needles.end(), [&](const std::string& n) {
      return cmdline.find(n) != std::string::npos;
    });
    if (matches && StateInStat(proc + "/stat") != 'Z') {
      found.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return found;
}

class DaemonFixture {
 public:
  // `dtraind`: the binary to run; empty: $DTRAIND_BIN.
  explicit DaemonFixture(std::vector<std::string> extra_args = {}, std::string dtraind = "")
      : extra_args_(std::move(extra_args)), dtraind_(std::move(dtraind)) {
    Start();
  }
  ~DaemonFixture() {
    if (daemon_) {
      daemon_->Signal(SIGTERM);
      daemon_->Wait();
    }
  }

  const std::string& socket() const { return socket_; }
  const TempDir& dir() const { return dir_; }
  pid_t pid() const { return daemon_ ? daemon_->pid() : -1; }
  // The live worker processes (`dtraind worker --job J --rank R --parent P ...`) of the daemon's
  // latest start, also once it was stopped or killed.
  std::vector<pid_t> WorkerProcesses() const {
    return ProcessesRunning({" worker --job ", " --parent " + std::to_string(started_pid_) + " "});
  }

  void Start() {
    std::vector<std::string> args = {dtraind_.empty() ? EnvPath("DTRAIND_BIN") : dtraind_,
                                     "--socket", socket_, "--state-dir", dir_.Path("state")};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    daemon_.emplace(StartProcess(args, dir_.Path("")));
    started_pid_ = daemon_->pid();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      auto probe = net::FrameStream::ConnectUnix(socket_, std::chrono::milliseconds(200));
      if (probe.ok()) {
        auto reply = TryRequest({{"type", "version"}});
        if (reply && (*reply)["ok"] == true) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    BOOST_FAIL("dtraind did not start: " << daemon_->Wait().err);
  }

  // Stops the daemon with `signal` and returns how it ended.
  ProcessResult Stop(int signal) {
    daemon_->Signal(signal);
    ProcessResult r = daemon_->Wait();
    daemon_.reset();
    return r;
  }

  // One request on a fresh connection; nullopt when the daemon did not answer.
  std::optional<nlohmann::json> TryRequest(nlohmann::json request) const {
    request["v"] = 1;
    auto stream = net::FrameStream::ConnectUnix(socket_, std::chrono::seconds(5));
    if (!stream.ok()) return std::nullopt;
    if (!stream.value()
             .WriteString(net::MessageType::kControl, 0, 0, request.dump(), std::chrono::seconds(5))
             .ok()) {
      return std::nullopt;
    }
    auto frame = stream.value().Read(std::chrono::seconds(120));
    if (!frame.ok()) return std::nullopt;
    nlohmann::json reply = nlohmann::json::parse(frame.value().payload, nullptr, false);
    if (reply.is_discarded()) return std::nullopt;
    return reply;
  }

  nlohmann::json Request(const nlohmann::json& request) const {
    auto reply = TryRequest(request);
    BOOST_REQUIRE_MESSAGE(reply.has_value(), "no reply to " << request.dump());
    return *reply;
  }

  std::int64_t Submit(const std::string& job_toml, int priority = 0) const {
    nlohmann::json reply = Request({{"type", "submit"}, {"job_toml", job_toml},
                                    {"source", "test.toml"}, {"priority", priority}});
    BOOST_REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    return reply["job"]["id"].get<std::int64_t>();
  }

  nlohmann::json Status(std::int64_t id) const {
    nlohmann::json reply = Request({{"type", "status"}, {"id", id}});
    BOOST_REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    return reply["job"];
  }

  nlohmann::json Wait(std::int64_t id) const {
    nlohmann::json reply = Request({{"type", "wait"}, {"id", id}});
    BOOST_REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    return reply["job"];
  }

  // The job's last `lines` log lines, as `dtrain logs --tail` prints them: for a failed test's
  // message, where a worker says why it ended.
  std::string LogTail(std::int64_t id, int lines = 40) const {
    const ProcessResult r = RunProcess({EnvPath("DTRAIN_BIN"), "--socket", socket(), "logs",
                                        std::to_string(id), "--tail", std::to_string(lines)},
                                       dir().Path(""));
    return "last log lines:\n" + r.out + r.err;
  }

  // Polls until the job is running at step `step` or later (or 30 s pass); the job then, running
  // or not (the caller requires what it needs).
  nlohmann::json WaitForStep(std::int64_t id, std::int64_t step) const {
    nlohmann::json job;
    for (int i = 0; i < 1500; ++i) {
      job = Status(id);
      if (job["state"] == "running" && job["step"].get<std::int64_t>() >= step) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return job;
  }

  // Polls until the job is running again after recovering, with `rows` worker rows (those of
  // both attempts), or 30 s pass; the job then. (The restart count moves before the events are
  // written, and a new worker's row may land just after the job is running again.)
  nlohmann::json WaitForRecovery(std::int64_t id, std::size_t rows) const {
    nlohmann::json job;
    for (int i = 0; i < 1500; ++i) {
      job = Status(id);
      const nlohmann::json& events = job["events"];
      if (job["state"] == "running" && events.size() >= 2 &&
          events[events.size() - 2]["to"] == "recovering" && events.back()["to"] == "running" &&
          job["workers"].size() == rows) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return job;
  }

  // Polls until the job's state is `state` (or 60 s pass).
  nlohmann::json WaitForState(std::int64_t id, const std::string& state) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    nlohmann::json job;
    while (std::chrono::steady_clock::now() < deadline) {
      job = Status(id);
      if (job["state"] == state) return job;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    BOOST_FAIL("job " << id << " never became " << state << ": " << job.dump());
    return job;
  }

 private:
  TempDir dir_;
  std::string socket_ = dir_.Path("dtraind.sock");
  std::vector<std::string> extra_args_;
  std::string dtraind_;
  std::optional<ChildProcess> daemon_;
  pid_t started_pid_ = -1;
};

}  // namespace dtrain::testing
