// A hostile neighbour's connection flood, for tests of the daemon's listeners: a process forked
// from the test that drops to another user's uid and gid before it opens anything, then opens
// many connections to a daemon's listeners (Unix socket or loopback TCP), optionally sends each a
// greeting (an HTTP request, say), and holds them, reopening every one the daemon closes, pass
// after pass, until told to hold still or to go.
//
//   ConnectionFlood flood(user.uid(), user.gid(), {FloodTarget::Tcp(http_port, 1100)});
//   flood.WaitOpened();   // every connection tried once
//   ...                   // the victim's requests, while the flood reopens what closes
//   flood.Hold();         // no more reopening; what the daemon kept stays open
//
// Bounded: the child reopens for at most kMaxPasses passes of kPass and dies by SIGALRM after
// kLifetime whatever the test does; it exits when the fixture goes. Root only (setuid). One
// thread at a time.
#pragma once

#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace dtrain::testing {

struct FloodTarget {
  std::string unix_path;       // a Unix socket, or
  std::uint16_t tcp_port = 0;  // 127.0.0.1:tcp_port
  std::string greeting;        // sent once on each connection as soon as it is connected
  int count = 0;               // connections held at once

  static FloodTarget Unix(std::string path, int count) { return {std::move(path), 0, "", count}; }
  static FloodTarget Tcp(std::uint16_t port, int count, std::string greeting = "") {
    return {"", port, std::move(greeting), count};
  }
};

class ConnectionFlood {
 public:
  static constexpr int kPassMs = 100;
  static constexpr int kMaxPasses = 3000;  // 300 s of reopening at most
  static constexpr unsigned kLifetime = 400;  // seconds

  ConnectionFlood(uid_t uid, gid_t gid, std::vector<FloodTarget> targets)
      : targets_(std::move(targets)) {
    for (std::size_t t = 0; t < targets_.size(); ++t) {
      for (int i = 0; i < targets_[t].count; ++i) conns_.push_back({t, -1, false});
    }
    polls_.resize(conns_.size() + 1);
    int control[2], report[2];
    BOOST_REQUIRE(::pipe2(control, O_CLOEXEC) == 0 && ::pipe2(report, O_CLOEXEC) == 0);
    pid_ = ::fork();
    BOOST_REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::close(control[1]);
      ::close(report[0]);
      Run(uid, gid, control[0], report[1]);  // never returns
    }
    ::close(control[0]);
    ::close(report[1]);
    control_ = control[1];
    report_ = report[0];
  }
  ~ConnectionFlood() {
    ::close(control_);  // the child exits when it reads the end
    ::close(report_);
    ::waitpid(pid_, nullptr, 0);
  }
  ConnectionFlood(const ConnectionFlood&) = delete;
  ConnectionFlood& operator=(const ConnectionFlood&) = delete;

  pid_t pid() const { return pid_; }
  // Returns once every connection has been tried once.
  void WaitOpened() { Expect('o'); }
  // Stops reopening; returns once the child has.
  void Hold() { Order('h'); }

 private:
  struct Conn {
    std::size_t target;
    int fd;
    bool greeted;
  };

  void Expect(char what) {
    char got = 0;
    BOOST_REQUIRE_MESSAGE(::read(report_, &got, 1) == 1 && got == what,
                          "the flood's process did not report '" << what << "'");
  }
  void Order(char what) {
    BOOST_REQUIRE(::write(control_, &what, 1) == 1);
    Expect('k');
  }

  // The child, from here on: system calls only (no allocation after the fork).
  [[noreturn]] void Run(uid_t uid, gid_t gid, int control, int report) {
    ::alarm(kLifetime);
    if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) ::_exit(2);
    rlimit files{};
    ::getrlimit(RLIMIT_NOFILE, &files);
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
    for (Conn& c : conns_) Open(c);
    Greet();
    if (::write(report, "o", 1) != 1) ::_exit(3);
    bool reopen = true;
    for (int pass = 0; pass < kMaxPasses; ++pass) {
      pollfd order{control, POLLIN, 0};
      if (::poll(&order, 1, kPassMs) > 0) {
        char c = 0;
        if (::read(control, &c, 1) != 1) ::_exit(0);
        reopen = c != 'h';
        if (::write(report, "k", 1) != 1) ::_exit(3);
      }
      if (reopen) Reopen();
    }
    pollfd order{control, POLLIN, 0};
    ::poll(&order, 1, -1);  // held until the test goes
    ::_exit(0);
  }

  void Open(Conn& c) {
    const FloodTarget& t = targets_[c.target];
    c.greeted = t.greeting.empty();
    if (t.tcp_port != 0) {
      c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(t.tcp_port);
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (c.fd >= 0 && ::connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 &&
          errno != EINPROGRESS) {
        Drop(c);
      }
      return;
    }
    c.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, t.unix_path.c_str(),
                std::min(t.unix_path.size(), sizeof addr.sun_path - 1));
    if (c.fd >= 0 && ::connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      Drop(c);  // the backlog is full: tried again next pass
    }
  }

  static void Drop(Conn& c) {
    if (c.fd >= 0) ::close(c.fd);
    c.fd = -1;
  }

  // Sends the greeting on each connection that has connected since.
  void Greet() {
    for (Conn& c : conns_) {
      if (c.greeted || c.fd < 0) continue;
      pollfd ready{c.fd, POLLOUT, 0};
      if (::poll(&ready, 1, 0) <= 0 || (ready.revents & POLLOUT) == 0) continue;
      const std::string& g = targets_[c.target].greeting;
      c.greeted = ::send(c.fd, g.data(), g.size(), MSG_NOSIGNAL) > 0;
    }
  }

  // Reopens every connection the daemon closed (or that never opened), discarding what came.
  void Reopen() {
    for (std::size_t i = 0; i < conns_.size(); ++i) {
      polls_[i] = {conns_[i].fd, POLLIN, 0};  // a negative fd is skipped by poll
    }
    ::poll(polls_.data(), conns_.size(), 0);
    char sink[4096];
    for (std::size_t i = 0; i < conns_.size(); ++i) {
      Conn& c = conns_[i];
      if (c.fd >= 0 && (polls_[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        const ssize_t n = ::recv(c.fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n > 0 || (n < 0 && errno == EAGAIN)) continue;
        Drop(c);
      }
      if (c.fd < 0) Open(c);
    }
    Greet();
  }

  std::vector<FloodTarget> targets_;
  std::vector<Conn> conns_;
  std::vector<pollfd> polls_;
  pid_t pid_ = -1;
  int control_ = -1;
  int report_ = -1;
};

}  // namespace dtrain::testing
