// FakeDaemon: a stand-in for dtraind in CLI tests. It listens on a Unix socket in a test's
// directory, serves one connection at a time on its own thread, records every request, and
// answers through the test's handler, which writes whatever frames the case needs (a reply, a
// stream, an error, a checkpoint blob, or nothing at all).
//
//   FakeDaemon daemon(dir.Path("d.sock"), [](const nlohmann::json& request, FrameStream& s) {
//     SendJson(s, {{"ok", true}, {"job", JobObject(7, "running")}});
//   });
//   RunProcess({bin, "--socket", daemon.socket(), "status", "7"}, dir.Path(""));
//   BOOST_TEST(daemon.Requests().at(0)["type"] == "status");
//
// Requests() and Connections() are safe to call from the test thread while it serves.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/net/frame_stream.h"
#include "core/net/socket.h"

namespace dtrain::testing {

// Writes one control frame holding `object` with "v": 1. Unchecked: a client that is gone fails
// on its own side, which is what the tests look at.
inline void SendJson(net::FrameStream& stream, nlohmann::json object) {
  object["v"] = 1;
  (void)stream.WriteString(net::MessageType::kControl, 0, 0, object.dump(),
                           std::chrono::seconds(5));
}

class FakeDaemon {
 public:
  using Handler = std::function<void(const nlohmann::json& request, net::FrameStream& stream)>;

  FakeDaemon(std::string socket, Handler handler)
      : socket_(std::move(socket)), handler_(std::move(handler)) {
    Result<int> listener = net::ListenUnix(socket_, 8);
    if (!listener.ok()) throw std::runtime_error(listener.status().message());
    listen_fd_ = listener.value();
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeDaemon() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
  }
  FakeDaemon(const FakeDaemon&) = delete;
  FakeDaemon& operator=(const FakeDaemon&) = delete;

  const std::string& socket() const { return socket_; }
  int Connections() const { return connections_.load(); }
  std::vector<nlohmann::json> Requests() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }
  // Waits up to 10 s until `count` requests have arrived.
  bool WaitForRequests(std::size_t count) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (Requests().size() >= count) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd ready{listen_fd_, POLLIN, 0};
      if (::poll(&ready, 1, 50) != 1) continue;
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      ++connections_;
      net::FrameStream stream(fd);
      while (!stop_) {
        Result<net::Frame> frame = stream.Read(std::chrono::milliseconds(100));
        if (!frame.ok()) {
          if (frame.status().code() == StatusCode::kTimeout) continue;
          break;  // the client is gone
        }
        nlohmann::json request = nlohmann::json::parse(frame.value().payload, nullptr, false);
        {
          std::lock_guard<std::mutex> lock(mutex_);
          requests_.push_back(request);
        }
        handler_(request, stream);
      }
    }
  }

  std::string socket_;
  Handler handler_;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  mutable std::mutex mutex_;
  std::vector<nlohmann::json> requests_;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace dtrain::testing
