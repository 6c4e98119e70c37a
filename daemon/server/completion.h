// Completion<T>: a one-shot result that coroutines on the io thread wait for, until a deadline —
// the daemon's one way for one coroutine to hand a value to others waiting for it (the rendezvous
// of an attempt's processes, the parts of a model-parallel checkpoint, a replica's restarted
// partitions).
//
//   Completion<Status> stored(io, 60s);
//   std::optional<Status> got = co_await stored.Wait();  // elsewhere: stored.Set(Status::Ok());
//
// Copies share one state. Invariants: it completes once, by Set (with a value), Abandon (without)
// or its deadline passing while someone waits; a Wait after that returns at once, and a later Set
// or Abandon changes nothing. Touched only on the io_context's thread.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <system_error>
#include <utility>

namespace dtrain::server {

template <typename T>
class Completion {
 public:
  Completion(asio::io_context& io, std::chrono::steady_clock::duration deadline)
      : state_(std::make_shared<State>(io, deadline)) {}

  // Wakes every waiter with `value`.
  void Set(T value) {
    if (state_->done) return;
    state_->value = std::move(value);
    Complete();
  }
  // Wakes every waiter without a value.
  void Abandon() {
    if (!state_->done) Complete();
  }
  // Returns once it completed: its value, or none (abandoned, or the deadline passed).
  asio::awaitable<std::optional<T>> Wait() const {
    const std::shared_ptr<State> state = state_;  // the waiter's own hold on it
    if (!state->done) {
      std::error_code cancelled;
      co_await state->timer.async_wait(asio::redirect_error(asio::use_awaitable, cancelled));
      state->done = true;
    }
    co_return state->value;
  }

 private:
  struct State {
    State(asio::io_context& io, std::chrono::steady_clock::duration deadline)
        : timer(io, deadline) {}
    asio::steady_timer timer;
    std::optional<T> value;
    bool done = false;
  };
  void Complete() {
    state_->done = true;
    state_->timer.cancel();
  }

  std::shared_ptr<State> state_;
};

}  // namespace dtrain::server
