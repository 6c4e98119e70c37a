// DownpourStrategy: mode = "async" (Downpour SGD, Dean et al. 2012, with an optional staleness
// bound: stale synchronous parallel, Ho et al. 2013). The replica never updates its parameters
// itself: it sums its gradients, every `push_every` steps pushes the sum to the shards
// (parameter_shard.h in async mode), which apply it on arrival with their optimizer (Adagrad
// usually) at the window's mean lr; every `fetch_every` steps it fetches fresh parameters.
//
//   DownpourStrategy downpour(shard_links, n, {.rank = r, .workers = 4, .push_every = 4,
//                                              .fetch_every = 4, .max_staleness = 2});
//   downpour.Connect(trainer.params(), 0);  ...  trainer.Run(listener);  downpour.Finish();
//
// What a push means: sum_i g_i over the window's steps, applied by the shard as ONE optimizer
// step with lr = mean_i lr_i. With SGD that moves the parameters as the window's local steps
// would have (to first order); with Adagrad or Adam it is one adaptive step on the sum.
//
// Overlap: all communication runs on a background thread of this strategy, in order. Apply
// hands the finished window's sum to it (double-buffered: the next window accumulates into the
// other buffer) and returns; a fetch lands in a buffer of its own, and the fresh parameters are
// copied into the trainer's at the end of the first Apply after they arrive (one memcpy of n
// floats per fetch: the price of computing while they travel). The training thread blocks only
// when the staleness bound requires, or when a push is still sending the buffer it needs.
//
// Clocks (ps_protocol.md): the replica's clock c is the number of its pushes. The fetch replies
// give each shard's global clock g; a push carries, per shard, the g of the parameters of its
// window's first step. With max_staleness s > 0, before computing at clock c the replica makes
// sure its parameters have g >= c - s on every shard, fetching (and waiting, counted in
// wait_seconds) if they do not; the shard holds that fetch until g >= c - s. So no push is more
// than s clocks stale. s = 0: no bound.
//
// ProposeStop returns false: async replicas stop on their own. Finish() pushes what the last
// window accumulated and says goodbye (a departed replica no longer holds back the bound). The
// destructor does not: a replica destroyed without Finish has failed, and its shards see it
// leave without a goodbye, as if it had died, so that a restarted process may take its place.
// With compression, each push is encoded with this replica's error feedback (ps_client.h); the
// residual is not checkpointed (shards apply pushes as they come, so an async resume is not exact
// anyway): a resumed or restarted replica starts with none. Stats(): comm_seconds is the
// communication thread's time in exchanges, wait_seconds the training thread's time blocked on it;
// WorkerStats() adds this replica's own view of staleness. Clipping (clip_norm > 0) clips each
// step's gradient.
//
// One thread at a time (the training thread); the strategy's own thread is internal. The links
// must outlive the strategy.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "core/dist/ps_client.h"
#include "core/dist/ps_strategy.h"
#include "core/math/buffer.h"
#include "core/train/strategy.h"

namespace dtrain::dist {

struct DownpourOptions {
  int rank = 0;
  int workers = 1;
  int push_every = 1;      // m: steps per push
  int fetch_every = 1;     // steps per fetch
  int max_staleness = 0;   // s; 0 = unbounded. Must equal the shards'.
  float clip_norm = 0.0f;  // per step, on this replica's gradient
  std::chrono::milliseconds timeout{30'000};
  // The pushes' compression (ps_client.h): none, bf16 or topk; warmup_steps counts steps, so the
  // first ceil(warmup_steps / push_every) pushes go uncompressed.
  compress::Settings compression{};
};

// This replica's own view; cumulative.
struct DownpourStats {
  std::uint64_t pushes = 0;
  std::uint64_t fetches = 0;         // fetched parameters swapped in
  std::uint64_t forced_fetches = 0;  // fetches the staleness bound required
  std::uint64_t max_staleness = 0;   // max over pushes of c - min_k basis_k
  double wait_seconds = 0.0;         // the training thread blocked on communication
};

class DownpourStrategy final : public PsStrategy {
 public:
  DownpourStrategy(std::span<Link* const> shard_links, std::size_t num_params,
                   DownpourOptions options);
  ~DownpourStrategy() override;
  DownpourStrategy(const DownpourStrategy&) = delete;
  DownpourStrategy& operator=(const DownpourStrategy&) = delete;

  // Says hello to every shard and receives their current parameters into `params`.
  Status Connect(std::span<float> params, std::int64_t step) override;

  Status Apply(std::int64_t step, std::span<float> params, std::span<float> grad, float lr,
               const train::StepShare& share) override;
  optim::Optimizer* LocalOptimizer() override { return nullptr; }
  train::CommStats Stats() const override;
  DownpourStats WorkerStats() const { return stats_; }

  // After the last step: pushes the last window's unpushed part, takes the shards' state and
  // copies their parameters into `params`. Snapshot returns that same state from then on, so the
  // final checkpoint holds the parameters the final evaluation saw.
  Status Settle(std::span<float> params) override;
  // Every shard's state now (between this replica's steps; not a consistent cut across shards
  // or replicas in async mode), or the settled one. The version vectors say which pushes each
  // shard had applied.
  Result<PsSnapshot> Snapshot() override;
  // Pushes the unpushed part of the last window, says goodbye, stops the communication thread.
  // Idempotent; later Applies fail.
  Status Finish() override;
  bool KeepsClocks() const override { return true; }

 private:
  using Job = std::function<Status()>;

  // Queues a job for the communication thread; returns its sequence number.
  std::uint64_t Post(Job job);
  // Blocks until job `seq` has run; returns the first communication failure, if any.
  Status WaitFor(std::uint64_t seq);
  Status Failure() const;
  void CommLoop();
  void StopThread();

  void PushWindow();
  void StartFetch(std::uint64_t min_clock);
  // Copies fetched parameters into `params` if a fetch has arrived; true if it had.
  bool SwapIn(std::span<float> params);
  // Before computing at clock pushes_: params of g >= pushes_ - s on every shard.
  Status EnforceBound(std::span<float> params);
  std::string Me() const { return "worker rank " + std::to_string(options_.rank); }

  const DownpourOptions options_;
  const std::size_t num_params_;
  const std::size_t shards_;
  PsClient client_;  // used only by the communication thread (and before it starts)

  // The training thread's state.
  std::array<math::FloatBuffer, 2> accum_;   // the windows' gradient sums (double buffer)
  std::array<std::uint64_t, 2> push_seq_{};  // the job that reads accum_[i] (0: none)
  int cur_ = 0;                              // the buffer the current window accumulates into
  std::size_t window_steps_ = 0;
  double window_lr_ = 0.0;                   // sum of the window's lrs
  std::vector<std::uint64_t> window_basis_;  // per shard: g of the window's first step's params
  std::vector<std::uint64_t> cached_clock_;  // per shard: g of the params in use
  std::uint64_t pushes_ = 0;                 // this replica's clock
  std::uint64_t local_steps_ = 0;
  bool fetch_in_flight_ = false;
  std::uint64_t fetch_seq_ = 0;
  bool connected_ = false;
  bool finished_ = false;
  std::optional<PsSnapshot> settled_;  // Settle's
  Status finish_status_;
  DownpourStats stats_;

  // Shared with the communication thread, guarded by mu_.
  mutable std::mutex mu_;
  std::condition_variable cv_;  // a job was posted, finished, or stop_ was set
  std::deque<std::pair<std::uint64_t, Job>> jobs_;
  std::uint64_t posted_ = 0;
  std::uint64_t done_ = 0;
  bool stop_ = false;
  Status failure_;            // the first failed job's status
  bool fetch_ready_ = false;  // fetched_ and fetched_clock_ hold an unswapped fetch
  // Written by a fetch job, read by the training thread once fetch_ready_ says so.
  math::FloatBuffer fetched_;
  std::vector<std::uint64_t> fetched_clock_;

  std::thread comm_;  // last: starts after everything it uses exists
};

}  // namespace dtrain::dist
