// Status and Result<T>: recoverable errors as values across library boundaries.
//
//   Result<Dataset> r = ReadIdx(images, labels);
//   if (!r.ok()) return r.status();
//   Dataset d = std::move(r).value();
//
// A Status is either OK (code kOk, empty message) or failed: a code other than kOk and one
// human-readable message that already names the file/record/peer involved. The code is for
// callers that act differently on some failures (retry after a timeout); the message is for
// people. Both are [[nodiscard]]: a caller that means to ignore a failure says so with (void)
// and a comment why. Plain values; safe to copy between threads.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace dtrain {

// What kind of failure a Status is. kError: any failure no caller tells apart.
enum class StatusCode {
  kOk,
  kError,
  kTimeout,  // a deadline passed before the operation completed
  kClosed,   // the other end (or our own side) closed the connection
  kNoSpace,  // the disk is full: the same write may succeed once space is back
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  static Status Ok() { return Status(); }
  static Status Error(std::string message) {
    return Status(StatusCode::kError, std::move(message));
  }
  // `code` must not be kOk.
  static Status Error(StatusCode code, std::string message) {
    assert(code != StatusCode::kOk && "a failed Status needs a failure code");
    return Status(code, std::move(message));
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Status(StatusCode code, std::string message) : message_(std::move(message)), code_(code) {}
  std::string message_;
  StatusCode code_ = StatusCode::kOk;
};

// Holds either a T or a failed Status. value() may only be called when ok().
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(state_).ok() && "Result built from an OK status has no value");
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(state_); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace dtrain
