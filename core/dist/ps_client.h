// PsClient: a worker's side of the parameter-server protocol (core/dist/ps_protocol.md), over one
// Link to each shard. It cuts the flat gradient into the shards' ranges (ShardRanges) and sends
// each slice to its shard, and receives the shards' ranges straight into the flat parameters:
// floats go from and into the caller's buffers (Link::Send with a subspan), never through a
// staging copy. Metadata (step or clock, lr, rows, stop vote) travels in a header message before
// each request's floats.
//
//   PsClient client(shard_links, {.rank = 1, .workers = 4, .num_params = n});
//   client.Hello(params);                                   // params <- the shards' values
//   Result<std::uint32_t> vote = client.SyncStep(step, grad, lr, rows, total, kNoVote, params);
//
// With options.compression ("bf16" or "topk"; ps_protocol.md, "Compressed pushes") each push
// from step (sync) or clock (async) compression.warmup_steps on goes encoded by PlanPushes' plan,
// with this worker's error feedback; the hello tells each shard the encoding.
//
// Every request goes to every shard first, then the replies are read in shard order, so the
// shards work in parallel. Each call has the deadline options.timeout per message; errors name
// both sides: "worker rank 1: shard 0 of 2 [0, 62): step 3: closed: ...". After a failed call the
// links may be mid-message: the client refuses further calls (Goodbye included).
//
// Thread safety: one thread at a time (a strategy's communication thread), except Stats(), which
// is safe from any thread. The links must outlive the client and nobody else may use them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/compress/gradient_compressor.h"
#include "core/dist/link.h"
#include "core/dist/ps_messages.h"
#include "core/dist/shard_ranges.h"
#include "core/status.h"
#include "core/train/strategy.h"

namespace dtrain::dist {

struct PsClientOptions {
  int rank = 0;                               // this worker's rank, in [0, workers)
  int workers = 1;                            // N
  std::size_t num_params = 0;                 // n, the flat vector's length
  PsMode mode = PsMode::kSync;                // must match the shards'
  int max_staleness = 0;                      // async: must match the shards'
  std::chrono::milliseconds timeout{30'000};  // each message's deadline
  // Pushes' compression: none, bf16 or topk (powersgd makes every call fail); warmup_steps counts
  // sync steps, or async pushes (the push's clock).
  compress::Settings compression{};
  // Sync: b, the backup workers; must match the shard's. With b > 0: one shard, raw pushes.
  int backup_workers = 0;
  // Sync, elastic jobs (ps_protocol.md, "Elastic jobs"): the membership this worker trains in —
  // its epoch and size; `rank` is the worker's position there, in [0, members), and `workers`
  // stays the job's. members = 0: not elastic. A regroup reply fails the call.
  std::uint32_t membership = 0;
  int members = 0;
};

// The full state of every shard, assembled: what a checkpoint stores.
struct PsSnapshot {
  std::vector<float> params;                       // num_params floats
  std::vector<std::vector<float>> state;           // the optimizer's state vectors, num_params each
  std::vector<std::uint64_t> steps;                // per shard: its optimizer's steps
  std::vector<std::uint64_t> global_clock;         // per shard: g (sync: steps applied)
  std::vector<std::vector<std::uint64_t>> clocks;  // per shard, per worker: pushes applied
};

class PsClient {
 public:
  // shard_links[k] is connected to shard k of shard_links.size(). Invalid arguments make every
  // call fail, saying why.
  PsClient(std::span<Link* const> shard_links, PsClientOptions options);

  int shards() const { return static_cast<int>(links_.size()); }
  const std::vector<ShardRange>& ranges() const { return ranges_; }
  const PsClientOptions& options() const { return options_; }
  bool greeted() const { return greeted_; }

  // The first exchange with every shard: checks that both sides agree on the layout, the mode
  // and the workers (a mismatch names both sides' values). With a non-empty `params`
  // (num_params floats), receives the shards' current values into it. `clocks` (when not empty,
  // one per shard) receives each shard's clock (sync: steps applied; async: g). Elastic jobs:
  // `step` is the steps this worker completed (its parameters are the state after them); a shard
  // that applied another number refuses the hello, and it fails naming both.
  Status Hello(std::span<float> params, std::span<std::uint64_t> clocks = {},
               std::uint64_t step = 0);
  // Async, after Hello: the clock this worker continues from, the largest any shard gave it (0
  // for a fresh worker; a restarted one rejoins where its predecessor left, or at g).
  std::uint64_t own_clock() const { return own_clock_; }

  // Sync: pushes this worker's gradient of `step` (the mean over its `rows` of the step's
  // `total_rows`) with the lr and its stop vote, then receives the new parameters into `params`.
  // Returns the agreed vote (kNoVote or a train::StopVote). `propose_checkpoint` rides on the push;
  // checkpoint_agreed() then says whether any worker proposed one at this step. `take_all`: the
  // step must take every worker's gradient (backup workers).
  Result<std::uint32_t> SyncStep(std::uint64_t step, std::span<const float> grad, float lr,
                                 std::size_t rows, std::size_t total_rows, std::uint32_t vote,
                                 std::span<float> params, bool propose_checkpoint = false,
                                 bool take_all = false);
  // After SyncStep: every worker checkpoints after this step (ps_protocol.md, "Residuals").
  bool checkpoint_agreed() const { return checkpoint_agreed_; }
  // After SyncStep with backup workers: the last step `params` are the state after (the pushed
  // step, or a later one when the push came after its step), and which ranks each step from the
  // pushed one to it took (bit r: rank r). Without backup workers: the pushed step, no masks.
  std::uint64_t clock_reached() const { return clock_reached_; }
  std::span<const std::uint64_t> masks() const { return masks_; }

  // Sync with compression, on every worker between the same two steps (`next_step`: the next
  // one it pushes): sends each shard this worker's residual over the shard's range; rank 0
  // receives every worker's whole residual, rank by rank (workers x num_params floats), the
  // others none.
  Result<std::vector<std::vector<float>>> ExchangeResiduals(std::uint64_t next_step);

  // Async: pushes a gradient computed at this worker's clock `clock` (its pushes so far) from
  // parameters whose fetch reply from shard k said global clock basis[k]; the shard applies it
  // with `lr`. No reply.
  Status Push(std::uint64_t clock, std::span<const float> grad, float lr,
              std::span<const std::uint64_t> basis);
  // Receives every shard's current range into `params` once its global clock is >= min_clock
  // (0: at once); clocks[k] receives shard k's g.
  Status Fetch(std::uint64_t min_clock, std::span<float> params, std::span<std::uint64_t> clocks);

  // Every shard's full state (sync: the state after the last step this worker received).
  Result<PsSnapshot> Snapshot();

  // This worker's last message to every shard (`clock`: its pushes, or steps, so far); waits for
  // each shard's acknowledgement.
  Status Goodbye(std::uint64_t clock);

  // Cumulative: time inside calls (wait_seconds: blocked on a shard's reply header), bytes; with
  // compression its seconds and what the uncompressed pushes would have sent.
  train::CommStats Stats() const;

  // The compression of pushes (null without): its plan, one tensor per shard, and its state, this
  // worker's residual.
  compress::GradientCompressor* compressor() { return compressor_.get(); }
  bool compresses() const { return compressor_ != nullptr; }

 private:
  std::string Shard(int k) const;  // "shard 1 of 3 [100, 200)"
  // The workers the shards serve with this one: its membership's, else the job's.
  int Members() const { return options_.members > 0 ? options_.members : options_.workers; }
  Status Error(int k, const std::string& context, const Status& status) const;
  Status Usable() const;
  // What the hello's slot 22 carries: max_staleness (async) or backup_workers (sync).
  int StalenessOrBackups() const;
  Status SendHeader(int k, PsMessage kind, const PsHeader& header, Deadline deadline);
  Status SendData(int k, PsMessage kind, std::span<const float> data, Deadline deadline);
  // A push's header (`header`, kPsEncodedPush added to its flags here) and data to every shard:
  // `grad`'s slices, or their encodings when `compressed` (then grad goes through the compressor
  // first).
  Status SendPushes(PsHeader header, std::span<const float> grad, bool compressed,
                    std::span<const std::uint64_t> basis, Deadline deadline);
  // Receives shard k's reply header to `kind`, checking its tag and sender.
  Result<PsHeader> ReceiveReply(int k, PsMessage kind, const std::string& context);
  Status ReceiveData(int k, PsMessage kind, std::span<float> out, const std::string& context);
  PsHeader Request() const;  // a header from this worker
  // Marks the client broken and returns `status`.
  Status Broken(Status status);
  void AddTime(Clock::time_point start);  // the call that began at `start` into comm_seconds

  std::vector<Link*> links_;  // not owned: the caller keeps them alive (see above)
  PsClientOptions options_;
  std::vector<ShardRange> ranges_;
  Status unusable_;
  bool greeted_ = false;
  bool checkpoint_agreed_ = false;
  std::uint64_t clock_reached_ = 0;
  std::vector<std::uint64_t> masks_;
  std::uint64_t own_clock_ = 0;
  std::unique_ptr<compress::GradientCompressor> compressor_;  // with compression only
  std::vector<float> encoded_;                                // a push's messages, shard by shard

  mutable std::mutex stats_mu_;
  train::CommStats stats_;         // guarded by stats_mu_
  std::uint64_t saved_bytes_ = 0;  // what compression kept off the wire; guarded by stats_mu_
};

}  // namespace dtrain::dist
