// dtraind latencies, through a real daemon on a temporary socket:
//   - submit-to-first-step: from the client's submit to the first training step's metric being
//     recorded (worker start, data load and one step included), over 20 sequential jobs;
//   - status: round-trip time of `status` requests from 100 concurrent clients (50 each).
// Prints medians and p99 (tail latencies on this shared 2-core machine vary between runs).
// Usage: bench_daemon_latency [PATH_TO_DTRAIND]   (default: ../daemon/dtraind beside this binary)
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/net/frame_stream.h"

extern char** environ;

namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kJob = R"(name = "latency"
[data]
format = "synthetic"
synthetic = "blobs"
rows = 2000
test_rows = 200
features = 16
classes = 3
[model]
type = "softmax"
[train]
epochs = 1
batch_size = 64
log_every = 1
[optimizer]
type = "sgd"
lr = 0.1
)";

std::optional<json> Request(const std::string& socket, json request) {
  request["v"] = 1;
  auto stream = dtrain::net::FrameStream::ConnectUnix(socket, 5s);
  if (!stream.ok()) return std::nullopt;
  if (!stream.value().WriteString(dtrain::net::MessageType::kControl, 0, 0, request.dump(), 5s).ok()) {
    return std::nullopt;
  }
  auto frame = stream.value().Read(120s);
  if (!frame.ok()) return std::nullopt;
  json reply = json::parse(frame.value().payload, nullptr, false);
  if (reply.is_discarded()) return std::nullopt;
  return reply;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string dtraind;
  if (argc > 1) {
    dtraind = argv[1];
  } else {
    char self[PATH_MAX] = {};
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    dtraind = (std::filesystem::path(std::string(self, n > 0 ? static_cast<std::size_t>(n) : 0))
                   .parent_path() / ".." / "daemon" / "dtraind").string();
  }
  const auto dir = std::filesystem::temp_directory_path() / ("dtrain-latency-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string socket = (dir / "d.sock").string();
  const std::string state = (dir / "state").string();
  std::vector<std::string> args = {dtraind, "--socket", socket, "--state-dir", state,
                                   "--max-jobs", "1"};
  std::vector<char*> argv_spawn;
  for (std::string& a : args) argv_spawn.push_back(a.data());
  argv_spawn.push_back(nullptr);
  pid_t pid = 0;
  if (::posix_spawn(&pid, argv_spawn[0], nullptr, nullptr, argv_spawn.data(), environ) != 0) {
    std::fprintf(stderr, "cannot start %s\n", dtraind.c_str());
    return 1;
  }
  auto stop = [&] {
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
    std::filesystem::remove_all(dir);
  };
  for (int i = 0; i < 300 && !Request(socket, {{"type", "version"}}); ++i) std::this_thread::sleep_for(20ms);

  std::vector<double> first_step;
  for (int i = 0; i < 20; ++i) {
    const double submitted = Now();
    auto reply = Request(socket, {{"type", "submit"}, {"job_toml", kJob}, {"source", "latency.toml"}});
    if (!reply || (*reply)["ok"] != true) {
      std::fprintf(stderr, "submit failed\n");
      stop();
      return 1;
    }
    const auto id = (*reply)["job"]["id"].get<std::int64_t>();
    Request(socket, {{"type", "wait"}, {"id", id}});
    auto metrics = Request(socket, {{"type", "metrics"}, {"id", id}, {"name", "train_loss"}});
    if (!metrics || (*metrics)["metrics"].empty()) {
      std::fprintf(stderr, "job %lld recorded no metric\n", static_cast<long long>(id));
      stop();
      return 1;
    }
    first_step.push_back((*metrics)["metrics"][0]["time"].get<double>() - submitted);
  }

  constexpr int kClients = 100, kRequests = 50;
  std::vector<std::vector<double>> per_client(kClients);
  std::vector<std::thread> clients;
  int failures = 0;
  std::mutex failures_mu;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int r = 0; r < kRequests; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        auto reply = Request(socket, {{"type", "status"}, {"id", 1 + (c + r) % 20}});
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (!reply || (*reply)["ok"] != true) {
          std::lock_guard lock(failures_mu);
          ++failures;
        }
        per_client[c].push_back(ms);
      }
    });
  }
  for (std::thread& t : clients) t.join();
  std::vector<double> status;
  for (const auto& v : per_client) status.insert(status.end(), v.begin(), v.end());
  stop();

  std::printf("dtraind latency (one daemon, this machine)\n");
  std::printf("  submit -> first training step   median %7.1f ms   max %7.1f ms   (20 jobs)\n",
              1e3 * Percentile(first_step, 0.5), 1e3 * Percentile(first_step, 1.0));
  std::printf("  status, 100 concurrent clients  median %7.2f ms   p99 %7.2f ms   (%zu requests, %d failed)\n",
              Percentile(status, 0.5), Percentile(status, 0.99), status.size(), failures);
  return failures == 0 ? 0 : 1;
}
