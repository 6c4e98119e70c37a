// Asio plumbing shared by the daemon's server code: running blocking work (SQLite, file I/O,
// job-file validation) on the blocking pool from a coroutine on the I/O thread, reading and
// writing whole frames (core/net/protocol.md) on a stream socket, and a listener's accept loop.
//
//   Result<JobRecord> job = co_await OffThread(pool, [&] { return store.GetJob(id); });
//   Result<net::Frame> frame = co_await ReadFrame(socket, kMaxControlPayload);
//
// Include only from daemon/server .cc files (Asio is heavy). OffThread resumes the caller on its
// own executor; the function runs on one of the pool's threads.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <asio/awaitable.hpp>
#include <asio/async_result.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <optional>
#include <string>
#include <functional>
#include <type_traits>

#include "core/net/frame.h"
#include "core/status.h"
#include "daemon/server/byte_budget.h"

namespace dtrain::server {

// Runs f() on `pool` and completes with its result on the awaiting coroutine's executor, which
// is kept busy (a work guard) meanwhile so that its io_context does not run out of work.
template <typename R, typename F>
auto RunOnPool(asio::thread_pool& pool, F f) {
  return asio::async_initiate<const asio::use_awaitable_t<>, void(std::optional<R>)>(
      [&pool](auto handler, F fn) {
        auto home = asio::get_associated_executor(handler);
        asio::post(pool, [handler = std::move(handler), fn = std::move(fn),
                          work = asio::make_work_guard(home)]() mutable {
          std::optional<R> result(fn());
          auto executor = work.get_executor();
          asio::post(executor, [handler = std::move(handler), result = std::move(result)]() mutable {
            std::move(handler)(std::move(result));
          });
        });
      },
      asio::use_awaitable, std::move(f));
}

// GCC 12 destroys temporaries with non-trivial destructors wrongly when their full-expression
// contains co_await (a double free). So `f` is taken by reference, and a caller passes a lambda
// that captures strings or other owning values as a NAMED local:
//   auto create = [this, record] { return store.CreateJob(record); };
//   auto id = co_await OffThread(pool, create);
// A lambda that captures only pointers and integers may be written in place.
template <typename F>
asio::awaitable<std::invoke_result_t<F&>> OffThread(asio::thread_pool& pool, F&& f) {
  using R = std::invoke_result_t<F&>;
  std::optional<R> result = co_await RunOnPool<R>(pool, std::ref(f));
  co_return std::move(*result);
}

// Reads one frame; any malformed input is an error (the caller closes the connection). A
// version mismatch is answered with a version-mismatch frame first. `progress`, if given, is set
// to the time whenever bytes of the frame have arrived (at least every MiB), so a watchdog can tell
// a large frame on a slow link from a silent peer. `budget`, if given, must cover the payload's
// declared length while it is read, or the frame is refused (kTooLarge) before any of it is.
template <typename Socket>
asio::awaitable<Result<net::Frame>> ReadFrame(
    Socket& socket, std::uint32_t max_payload,
    std::chrono::steady_clock::time_point* progress = nullptr, ByteBudget* budget = nullptr) {
  std::array<std::uint8_t, net::kHeaderSize> header_bytes;
  std::error_code ec;
  co_await asio::async_read(socket, asio::buffer(header_bytes),
                            asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return Status::Error(std::string(net::FrameErrorName(net::FrameError::kClosed)));
  if (progress != nullptr) *progress = std::chrono::steady_clock::now();
  net::Frame frame;
  std::uint16_t peer_version = 0;
  if (auto err = net::DecodeHeader(header_bytes, max_payload, frame.header, &peer_version)) {
    if (*err == net::FrameError::kVersionMismatch) {
      const std::string reply = net::EncodeFrame(net::MessageType::kVersionMismatch, 0,
                                                 net::kNoSender, 0,
                                                 net::kVersionMismatchPayload);
      co_await asio::async_write(socket, asio::buffer(reply),
                                 asio::redirect_error(asio::use_awaitable, ec));
    }
    co_return Status::Error(std::string(net::FrameErrorName(*err)));
  }
  // The buffer grows with what arrives (64 KiB, then doubling up to 1 MiB a read), so a header
  // that merely claims a large payload costs nothing.
  const std::size_t length = frame.header.length;
  const std::optional<ByteBudget::Hold> held =
      budget != nullptr ? budget->Take(length) : std::nullopt;
  if (budget != nullptr && !held) {
    co_return Status::Error(std::string(net::FrameErrorName(net::FrameError::kTooLarge)));
  }
  std::size_t have = 0;
  while (have < length && !ec) {
    const std::size_t chunk =
        std::min({length - have, std::max<std::size_t>(64 * 1024, have), std::size_t{1} << 20});
    frame.payload.resize(have + chunk);
    co_await asio::async_read(socket, asio::buffer(frame.payload.data() + have, chunk),
                              asio::redirect_error(asio::use_awaitable, ec));
    have += chunk;
    if (progress != nullptr) *progress = std::chrono::steady_clock::now();
  }
  if (ec) co_return Status::Error(std::string(net::FrameErrorName(net::FrameError::kClosed)));
  if (!net::PayloadMatches(frame.header, {reinterpret_cast<const std::uint8_t*>(frame.payload.data()),
                                          frame.payload.size()})) {
    co_return Status::Error(std::string(net::FrameErrorName(net::FrameError::kBadChecksum)));
  }
  co_return frame;
}

template <typename Socket>
asio::awaitable<bool> WriteFrame(Socket& socket, net::MessageType type, std::uint64_t job,
                                 std::string_view payload) {
  const std::string bytes = net::EncodeFrame(type, job, net::kNoSender, 0, payload);
  std::error_code ec;
  co_await asio::async_write(socket, asio::buffer(bytes),
                             asio::redirect_error(asio::use_awaitable, ec));
  co_return !ec;
}

// Accepts connections on `from` until it is closed, handing each to on_accepted. A failed accept
// (no descriptor left: EMFILE, ENFILE; no memory) waits before the next, kFirstAcceptPause and
// doubling up to kMaxAcceptPause while failures go on, so a listener at its limit does not spin.
inline constexpr std::chrono::milliseconds kFirstAcceptPause{50};
inline constexpr std::chrono::milliseconds kMaxAcceptPause{1000};

template <typename Acceptor, typename OnAccepted>
asio::awaitable<void> AcceptConnections(Acceptor& from, OnAccepted on_accepted) {
  asio::steady_timer pause(co_await asio::this_coro::executor);
  std::chrono::milliseconds wait{0};
  for (;;) {
    std::error_code ec;
    auto accepted = co_await from.async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (!from.is_open()) co_return;
    if (!ec) {
      wait = std::chrono::milliseconds(0);
      on_accepted(std::move(accepted));
      continue;
    }
    wait = std::clamp(wait * 2, kFirstAcceptPause, kMaxAcceptPause);
    pause.expires_after(wait);
    co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

}  // namespace dtrain::server
