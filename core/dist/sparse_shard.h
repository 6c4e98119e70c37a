// SparseShard: one parameter-server shard of a sparse model (runs in a server process). It holds
// a KeyTable of the keys sparse::ShardOfKey gives it — made when a worker first pulls them, with
// the optimizer's state beside them — and shard 0 also the model's globals. It serves N workers
// in Downpour's asynchronous mode, one Link each, in the sparse protocol of
// core/dist/ps_protocol.md ("Sparse models"): a worker pulls the slots of the keys of its next
// batch and pushes the gradients of the keys it touched, which the shard applies on arrival.
// Only touched keys travel and only touched keys are held.
//
//   SparseShard shard({.shard = 1, .shards = 2, .workers = 4, .model = spec, ...});
//   shard.Load(part_of_a_checkpoint);     // optional, before Serve
//   Status s = shard.Serve(links);        // links[r]: worker rank r; until every goodbye
//
// Each worker's link is served by a thread of its own (as ParameterShard's async mode, for the
// same reasons); the table is guarded by one mutex. Every wait for a worker has the deadline
// options.timeout; on the first failure Serve closes every link (the other workers fail
// promptly, naming this shard) and returns it. Stats() is safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/dist/link.h"
#include "core/optim/optimizer.h"
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
  sparse::SparseModelSpec model;
  optim::OptimizerOptions optimizer;  // sgd, adagrad or ftrl
  std::uint64_t seed = 1;             // what InitSlot draws fm's factors from
  std::chrono::milliseconds timeout{30'000};
};

struct SparseShardStats {
  std::uint64_t pushes_applied = 0;
  std::uint64_t keys = 0;         // held
  std::uint64_t keys_pushed = 0;  // over every push
  std::uint64_t keys_pulled = 0;  // over every pull
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
  // The whole conversation with worker `rank` (its own thread).
  Status ServeWorker(Link& link, int rank);
  Status Answer(Link& link, int rank, std::uint32_t tag, Buffers& b, bool* goodbye);
  void Fail(const Status& status, std::span<Link* const> links);

  const SparseShardOptions options_;
  const std::string name_;
  const sparse::SparseModel model_;
  Status invalid_;
  mutable std::mutex mu_;
  sparse::KeyTable table_;  // guarded by mu_
  SparseShardStats stats_;  // guarded by mu_
  Status failure_;          // guarded by mu_
  bool failed_ = false;
};

}  // namespace dtrain::dist
