// ByteBudget: a daemon-wide bound on the bytes buffered for frames of connections that have not
// proven who they are yet (a TCP handshake, a Slurm task's hello, a key-less TCP client's
// query), so that strangers together cannot grow the daemon's memory past it however many
// connections they open. A frame's reader takes its declared length before reading the payload
// and gives it back when the frame is read or abandoned (the Hold goes).
//
//   ByteBudget budget(16u << 20);
//   std::optional<ByteBudget::Hold> hold = budget.Take(header.length);
//   if (!hold) { /* close the connection: strangers hold the whole budget now */ }
//
// Invariant: used() <= total(). A hold may outlive its budget. One thread at a time.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <utility>

namespace dtrain::server {

class ByteBudget {
  struct Use {
    std::size_t total = 0;
    std::size_t used = 0;
  };

 public:
  class Hold {
   public:
    Hold(Hold&&) noexcept = default;
    Hold& operator=(Hold&&) = delete;
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold() {
      if (use_) use_->used -= bytes_;
    }

   private:
    friend class ByteBudget;
    Hold(std::shared_ptr<Use> use, std::size_t bytes) : use_(std::move(use)), bytes_(bytes) {}
    std::shared_ptr<Use> use_;
    std::size_t bytes_;
  };

  explicit ByteBudget(std::size_t total) : use_(std::make_shared<Use>(Use{total, 0})) {}

  // `bytes` of the budget until the hold goes, or nullopt when that much is not left.
  std::optional<Hold> Take(std::size_t bytes) {
    if (bytes > use_->total - use_->used) return std::nullopt;
    use_->used += bytes;
    return Hold(use_, bytes);
  }

  std::size_t used() const { return use_->used; }
  std::size_t total() const { return use_->total; }

 private:
  std::shared_ptr<Use> use_;
};

}  // namespace dtrain::server
