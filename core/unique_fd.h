// UniqueFd: the one owner of a file descriptor, closing it when it goes (or when reset), so that
// no path out of a function leaks one. Move-only; -1 is "none".
//
//   UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
//   if (!fd) return Status::Error("cannot create a socket");
//   if (::connect(fd.get(), ...) != 0) return ...;   // closed on the way out
//   return fd.release();                              // now the caller's
//
// Not thread-safe: one owner at a time, like the descriptor itself.
#pragma once

#include <unistd.h>

#include <utility>

namespace dtrain {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  // Gives the descriptor up to the caller, who must close it.
  int release() { return std::exchange(fd_, -1); }
  // Closes the descriptor held, if any, and holds `fd` instead.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace dtrain
