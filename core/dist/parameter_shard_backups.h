// ParameterShard::Backups: the state ServeBackups' threads share under the shard's mutex (sync
// mode with backup workers, parameter_shard_backups.cc), and an elastic job's membership's
// (parameter_shard_members.cc, with b' = min(b, n - 1)). Private to those two files.
//
// Invariants: `state` is the range after the last step applied (`applied` steps in all); a
// worker's reply, once prepared, holds the state of its step until it is sent; `regroup` never
// clears (a membership that lost a member is done).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/dist/parameter_shard.h"

namespace dtrain::dist {

struct ParameterShard::Backups {
  // A push reply, ready to send: the header, the range after its step, the masks.
  struct Reply {
    PsHeader header;
    std::shared_ptr<const std::vector<float>> state;
    std::vector<float> masks;  // a u64 per step, two u32 bit patterns, low word first
  };

  Backups(std::size_t n, int b, std::size_t size, std::uint64_t steps,
          std::span<const float> params)
      : workers(n),
        backup_workers(static_cast<std::size_t>(b)),
        expected(n, 0),
        held(n, false),
        grads(n, math::FloatBuffer(size)),
        rows(n, 0),
        replies(n),
        departed(n, false),
        taken(n, 0),
        sum(size),
        applied(steps) {
    Publish(params);
  }

  // Makes `params` the published state, in a copy no reply holds any more (the replies of the
  // steps not yet sent and the newest state keep theirs), so a step reuses a buffer rather than
  // allocating, and touching fresh pages of, the whole range again.
  void Publish(std::span<const float> params) {
    auto spare = std::ranges::find_if(copies, [](const auto& c) { return c.use_count() == 1; });
    if (spare == copies.end()) {
      copies.push_back(std::make_shared<std::vector<float>>(params.size()));
      spare = copies.end() - 1;
    }
    // Its last holder's reads happened before its count fell to 1 (a release); this fence orders
    // them before the writes below (use_count loads relaxed). New holders only copy `state` or a
    // reply under the shard's mutex, which the caller holds.
    std::atomic_thread_fence(std::memory_order_acquire);
    std::ranges::copy(params, (*spare)->begin());
    state = *spare;
  }

  const std::size_t workers;
  // b: the pushes a step may go without (an elastic membership's b' = min(b, workers - 1)); with
  // 0, replies carry no masks.
  const std::size_t backup_workers;
  std::optional<std::uint64_t> next;    // the step being collected; the first push sets it
  std::vector<std::uint64_t> expected;  // per worker: the step its next push must carry
  // The pushes of `next` that have come, held (with their rows) until it is applied.
  std::vector<bool> held;
  std::vector<math::FloatBuffer> grads;
  std::vector<std::uint32_t> rows;
  std::optional<int> first;  // the first of them: the others' lr and total_rows must match its
  float lr = 0.0f;
  std::uint32_t total_rows = 0;
  // What `next` publishes, and whether it takes every gradient: from its pushes, and from late
  // pushes that carried a proposal or a vote (sticky until a step publishes them).
  std::uint32_t vote = kNoVote;
  std::uint32_t checkpoint = 0;
  bool take_all = false;
  std::vector<std::optional<Reply>> replies;  // per worker: its push's reply, once ready
  std::vector<bool> departed;                 // per worker: said goodbye
  std::size_t departures = 0;
  std::vector<std::uint64_t> taken;  // per worker: its pushes taken
  math::FloatBuffer sum;
  std::uint64_t applied;  // the global clock: steps applied (Load's steps first)
  // Published: the range after the last step applied, its vote, and each step's mask from
  // masks_from on (older ones no worker can miss any more).
  std::shared_ptr<const std::vector<float>> state;
  std::vector<std::shared_ptr<std::vector<float>>> copies;  // Publish's buffers, `state` among them
  std::uint32_t last_vote = kNoVote;
  std::deque<std::uint64_t> masks;
  std::uint64_t masks_from = 0;
  bool hold = false;  // after a checkpoint or a stop: no step until rank 0's next request
  // Elastic: a member is gone (since lost_at) or a newer membership formed; every request but a
  // goodbye is answered with a regroup reply, and no step is applied any more.
  bool regroup = false;
  Clock::time_point lost_at;
};

}  // namespace dtrain::dist
