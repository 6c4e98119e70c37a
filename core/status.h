// Status and Result<T>: recoverable errors as values across library boundaries.
//
//   Result<Dataset> r = ReadIdx(images, labels);
//   if (!r.ok()) return r.status();
//   Dataset d = std::move(r).value();
//
// A Status is either OK or carries one human-readable message that already names the
// file/record/peer involved. Plain values; safe to copy between threads.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace dtrain {

class Status {
 public:
  Status() = default;  // OK
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message), true); }

  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }

 private:
  Status(std::string message, bool failed) : message_(std::move(message)), failed_(failed) {}
  std::string message_;
  bool failed_ = false;
};

// Holds either a T or a failed Status. value() may only be called when ok().
template <typename T>
class Result {
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
