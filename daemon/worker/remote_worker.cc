#include "daemon/worker/remote_worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/net/auth.h"
#include "core/net/frame_stream.h"
#include "core/net/host_info.h"
#include "daemon/worker/exit_status.h"
#include "daemon/worker/launch_secret.h"
#include "daemon/worker/stand_in.h"

namespace dtrain::worker {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

int g_stop_pipe[2] = {-1, -1};  // written by the signal handler

extern "C" void OnStandInStopSignal(int) {
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = ::write(g_stop_pipe[1], &byte, 1);
}

Result<net::FrameStream> ConnectToPeer(const RemoteWorkerArgs& args) {
  const std::optional<net::HostPort> to = net::SplitHostPort(args.peer);
  if (!to) return Status::Error("node " + args.node + " has no listener address");
  Result<net::ClusterKey> key = net::LoadClusterKey(args.key_file);
  if (!key.ok()) return key.status();
  Result<net::FrameStream> stream = net::FrameStream::ConnectTcp(to->host, to->port, 10s);
  if (!stream.ok()) return stream.status();
  stream.value().set_peer_name(args.node + " (" + args.peer + ")");
  if (Status auth = net::AuthenticateClient(stream.value(), key.value(), 10s); !auth.ok()) {
    return auth;
  }
  return stream;
}

}  // namespace

CLI::App* AddRemoteWorkerCommand(CLI::App& app, RemoteWorkerArgs& args) {
  CLI::App* cmd = app.add_subcommand("remote-worker", "Internal: a worker on a peer host");
  cmd->group("");  // hidden
  cmd->add_option("--peer", args.peer)->required();
  cmd->add_option("--node", args.node)->required();
  cmd->add_option("--key-file", args.key_file)->required();
  cmd->add_option("--job", args.job)->required();
  cmd->add_option("--rank", args.rank)->required();
  cmd->add_option("--parent", args.parent)->required();
  return cmd;
}

int RemoteWorkerMain(const RemoteWorkerArgs& args) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != args.parent) return ExitFailed("the daemon that started this worker is gone");
  if (::pipe2(g_stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return ExitFailed("pipe: cannot make one");
  struct sigaction action {};
  action.sa_handler = OnStandInStopSignal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);

  const std::string where = "worker rank " + std::to_string(args.rank) + " on " + args.node;
  Result<json> spawn = ReadLaunchSecret();
  if (!spawn.ok()) return ExitFailed("starting " + where + ": " + spawn.status().message());
  spawn.value()["v"] = 1;
  spawn.value()["type"] = "spawn_worker";
  Result<net::FrameStream> connected = ConnectToPeer(args);
  if (!connected.ok()) return ExitFailed("starting " + where + ": " + connected.status().message());
  net::FrameStream& stream = connected.value();
  if (Status sent = stream.WriteString(net::MessageType::kControl, 0, 0, spawn.value().dump(), 10s);
      !sent.ok()) {
    return ExitFailed("starting " + where + ": " + sent.message());
  }
  bool stop_sent = false;
  for (;;) {
    pollfd fds[2] = {{stream.fd(), POLLIN, 0}, {g_stop_pipe[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return ExitFailed(where + ": poll failed");
    }
    if ((fds[1].revents & POLLIN) != 0 && !stop_sent) {
      char drain[16];
      while (::read(g_stop_pipe[0], drain, sizeof drain) > 0) {
      }
      // The worker checkpoints and stops; the coordinator's grace period bounds the wait.
      const json stop = {{"v", 1}, {"type", "stop"}};
      stop_sent = stream.WriteString(net::MessageType::kControl, 0, 0, stop.dump(), 10s).ok();
    }
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    Result<net::Frame> frame = stream.Read(30s);
    if (!frame.ok()) return ExitFailed(where + ": lost its daemon: " + frame.status().message());
    const json event = json::parse(frame.value().payload, nullptr, false);
    if (!event.is_object()) return ExitFailed(where + ": its daemon sent a malformed message");
    if (event.value("ok", true) == false) {
      return ExitFailed("starting " + where + ": " + event.value("error", std::string("refused")));
    }
    const std::string type = event.value("type", std::string());
    if (event.contains("pid")) {
      std::printf("%s runs as pid %lld there\n", where.c_str(),
                  static_cast<long long>(event.value("pid", 0)));
      std::fflush(stdout);
    } else if (type == "line") {
      std::FILE* out = event.value("stream", std::string()) == "stderr" ? stderr : stdout;
      std::fprintf(out, "%s\n", event.value("line", std::string()).c_str());
      std::fflush(out);
    } else if (type == "exit") {
      return EndLike(event.value("exit_status", kExitFailed), event.value("signal", 0), where);
    }
  }
}

}  // namespace dtrain::worker
