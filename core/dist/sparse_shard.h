// SparseShard: one parameter-server shard of a sparse model (runs in a server process). It holds
// a KeyTable of the keys sparse::ShardOfKey gives it — made when a worker first pulls them, with
// the optimizer's state beside them — and shard 0 also the model's globals. It serves N workers,
// one Link each, in the sparse protocol of core/dist/ps_protocol.md ("Sparse models"): a worker
// pulls the slots of the keys of its next batch and pushes the gradients of the keys it touched.
// Only touched keys travel and only touched keys are held.
//
//   SparseShard shard({.shard = 1, .shards = 2, .workers = 4, .model = spec, ...});
//   shard.Load(part_of_a_checkpoint);     // optional, before Serve
//   Status s = shard.Serve(links);        // links[r]: worker rank r; until every goodbye
//
// Async mode (Downpour): a push is applied on arrival. Worker w's clock c_w is the number of its
// pushes applied; the global clock g is the least c_w of the workers that have not said goodbye
// (it never decreases). A pull reply carries g; the push computed from it carries that g_f, and
// its staleness c_w - g_f is recorded (Stats().staleness). With max_staleness s > 0 a pull from a
// worker at clock c waits until g >= c - s, so no push is staler than s (one that is is a
// protocol error) — as the dense ParameterShard's bound (parameter_shard.h).
//
// Sync mode (allreduce = "ps"): step t is applied once every worker has pushed its step t. The
// pushes are combined in rank order — per key, the sum over workers of (rows_r / total rows) x
// g_r, a key a worker did not touch counting 0: the mean gradient over the step's whole batch,
// bitwise the same every run — and one optimizer step is taken on the union of their keys. Each
// push is then answered with the agreed stop vote (the most urgent one proposed). A worker pulls
// its next batch's keys only after that answer, so every pull of step t+1 sees the state after
// step t on every shard, and so does a snapshot taken between steps: a consistent cut.
//
// Each worker's link is served by a thread of its own (as ParameterShard's async mode, for the
// same reasons); the table and the clocks are guarded by one mutex. Every wait for a worker has
// the deadline options.timeout; on the first failure Serve closes every link (the other workers
// fail promptly, naming this shard) and returns it. Stats() is safe from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/dist/link.h"
#include "core/dist/parameter_shard.h"
#include "core/dist/staleness.h"
#include "core/dist/worker_clocks.h"
#include "core/optim/optimizer.h"
#include "core/sparse/key_index.h"
#include "core/sparse/key_table.h"
#include "core/sparse/sparse_model.h"
#include "core/status.h"

namespace dtrain::dist {

// Request kinds of the sparse protocol; tags as the dense protocol's, with "SP" in the high half.
enum class SparseMessage : std::uint32_t {
  kHello = 1,
  kPush = 2,
  kPull = 3,
  kSnapshot = 4,
  kGoodbye = 5,
};
inline constexpr std::uint32_t kSparseTagBase = 0x53500000;
constexpr std::uint32_t SparseRequestTag(SparseMessage m) {
  return kSparseTagBase | static_cast<std::uint32_t>(m);
}
constexpr std::uint32_t SparseReplyTag(SparseMessage m) { return SparseRequestTag(m) | 0x80; }
constexpr std::uint32_t SparseDataTag(std::uint32_t header_tag) { return header_tag | 0x100; }
// Header flags: a pull that must not make missing keys (evaluation); a push with the globals'
// gradient (to shard 0).
inline constexpr std::uint32_t kSparseLookupOnly = 2;
inline constexpr std::uint32_t kSparseWithGlobals = 4;

// Keys on the wire: each key's u32 bit pattern in one float (never computed on).
void KeysToFloats(std::span<const std::uint32_t> keys, std::span<float> out);
void FloatsToKeys(std::span<const float> in, std::span<std::uint32_t> out);

struct SparseShardOptions {
  int shard = 0;
  int shards = 1;
  int workers = 1;
  PsMode mode = PsMode::kAsync;
  int max_staleness = 0;  // async: s; 0 = unbounded
  sparse::SparseModelSpec model;
  optim::OptimizerOptions optimizer;  // sgd, adagrad or ftrl
  std::uint64_t seed = 1;             // what InitSlot draws fm's factors from
  std::chrono::milliseconds timeout{30'000};
};

struct SparseShardStats {
  std::uint64_t pushes_applied = 0;
  std::uint64_t keys = 0;          // held
  std::uint64_t keys_pushed = 0;   // over every push
  std::uint64_t keys_pulled = 0;   // over every pull
  std::uint64_t global_clock = 0;  // g (sync: steps applied)
  StalenessStats staleness;        // of every applied push (sync: all 0)
};

class SparseShard {
 public:
  explicit SparseShard(SparseShardOptions options);

  // This shard's part of a checkpoint (sparse::ShardPart). Before Serve.
  Status Load(sparse::KeyTableState part);
  Status Serve(std::span<Link* const> links);
  SparseShardStats Stats() const;
  const std::string& name() const { return name_; }

 private:
  // One worker's conversation's buffers, kept from request to request (a pull or push
  // allocates nothing once they have grown to its size).
  struct Buffers {
    std::vector<float> header, reply, wire_keys, slots, globals, grads, global_grads;
    std::vector<std::uint32_t> keys;
  };
  // Sync: a worker's push of the step being gathered (its buffers stay untouched until the step
  // is applied: the worker's thread waits for that).
  struct Pending {
    const Buffers* buffers = nullptr;
    std::uint32_t rows = 0;
    std::uint32_t vote = kNoVote;
    float lr = 0.0f;
  };
  // The whole conversation with worker `rank` (its own thread).
  Status ServeWorker(Link& link, int rank);
  Status Answer(Link& link, int rank, std::uint32_t tag, Buffers& b, bool* goodbye);
  // Async: a pull at clock `clock` waits (lock held) until the staleness bound allows it.
  Status AwaitClock(std::unique_lock<std::mutex>& lock, int rank, std::uint64_t clock);
  // Async: applies worker `rank`'s push (in b) at once; its clock and staleness are checked.
  Status ApplyAsync(int rank, const PsHeader& request, const Buffers& b);
  // Sync: adds worker `rank`'s push (in b) to the step being gathered, applies the step when it
  // is the last, waits for that; returns the agreed vote.
  Result<std::uint32_t> GatherSync(int rank, const PsHeader& request, const Buffers& b);
  void ApplySyncStep();  // mu_ held: every pending push combined in rank order, one step
  // A goodbye; in sync mode refused while a step is partly gathered.
  Status Depart(int rank);
  void Fail(const Status& status, std::span<Link* const> links);

  const SparseShardOptions options_;
  const std::string name_;
  const sparse::SparseModel model_;
  Status invalid_;
  mutable std::mutex mu_;
  sparse::KeyTable table_;           // guarded by mu_
  SparseShardStats stats_;           // guarded by mu_
  Status failure_;                   // guarded by mu_
  bool failed_ = false;              // guarded by mu_
  std::condition_variable changed_;  // a clock moved, a step was applied, or a failure
  // Guarded by mu_: per worker, pushes applied (async) or steps pushed (sync), and goodbyes; g
  // (sync: steps applied, as every worker's push of a step completes it).
  WorkerClocks clocks_;
  // Sync, guarded by mu_: the step being gathered, and the vote agreed at the last step.
  std::vector<Pending> pending_;
  std::uint32_t agreed_vote_ = kNoVote;
  sparse::KeyIndex step_index_;  // the step's keys (the union of the pushes')
  std::vector<std::uint32_t> step_keys_;
  std::vector<float> step_grads_, step_globals_;
};

}  // namespace dtrain::dist
