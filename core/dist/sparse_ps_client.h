// SparseShardClient: a worker's side of the sparse parameter-server protocol
// (core/dist/ps_protocol.md, "Sparse models"), as the SparseParameters a SparseTrainer trains
// through: a pull sends each shard the batch's keys it holds (sparse::ShardOfKey) and scatters
// the slots that come back; a push sends each shard its keys' gradients (and shard 0 the
// globals'). Every request goes to every shard first, then the replies are read in shard order,
// so the shards work in parallel. Each push carries the client's clock (its pushes so far) and,
// per shard, the global clock of the pull it was computed from (async staleness); in sync mode a
// push also carries the batch's rows and this replica's stop vote, and waits for the shards'
// answer: the step applied everywhere, and the agreed vote.
//
//   SparseShardClient client(shard_links, {.rank = 1, .workers = 4}, model);
//   client.Hello();  ... SparseTrainer(model, options, rows, eval, client) ...;  client.Goodbye();
//
// Errors name both sides ("worker rank 1: sparse shard 0 of 2: pull: closed: ..."); after one
// the client refuses further calls. One thread at a time; Stats() from any thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/dist/link.h"
#include "core/dist/parameter_shard.h"
#include "core/dist/sparse_shard.h"
#include "core/sparse/sparse_trainer.h"
#include "core/train/strategy.h"

namespace dtrain::dist {

struct SparseClientOptions {
  int rank = 0;
  int workers = 1;
  PsMode mode = PsMode::kAsync;  // must match the shards'
  int max_staleness = 0;         // async: must match the shards'
  std::chrono::milliseconds timeout{30'000};
};

class SparseShardClient final : public sparse::SparseParameters {
 public:
  // shard_links[k] is connected to shard k; `model` must outlive the client.
  SparseShardClient(std::span<Link* const> shard_links, SparseClientOptions options,
                    const sparse::SparseModel& model);

  // Checks that every shard agrees on the layout.
  Status Hello();
  Status Pull(std::span<const std::uint32_t> keys, float* slots, float* globals) override;
  Status Push(std::span<const std::uint32_t> keys, const float* grad_slots,
              const float* grad_globals, float lr, std::size_t rows) override;
  Status Lookup(std::span<const std::uint32_t> keys, float* slots, float* globals) override;
  std::uint64_t KeyCount() const override;
  // Every shard's table, joined (sparse::JoinShardParts): what a checkpoint stores.
  Result<sparse::KeyTableState> Snapshot();
  Status Goodbye();
  train::CommStats Stats() const override;
  bool Collective() const override { return options_.mode == PsMode::kSync; }
  bool ProposeStop(train::StopReason reason) override;
  std::optional<train::StopReason> AgreedStop() const override { return agreed_; }
  int shards() const { return static_cast<int>(links_.size()); }

 private:
  // Splits `keys` over the shards: per shard its keys (as wire floats) and their places in `keys`.
  void Split(std::span<const std::uint32_t> keys);
  Status Request(int k, SparseMessage kind, const PsHeader& header);
  Status Data(int k, SparseMessage kind, std::span<const float> data);
  Result<PsHeader> Reply(int k, SparseMessage kind);
  Status ReplyData(int k, SparseMessage kind, std::span<float> out);
  Status PullOrLookup(std::span<const std::uint32_t> keys, float* slots, float* globals,
                      std::uint32_t flags);
  Status Broken(int k, const std::string& what, const Status& status);
  Deadline NextDeadline() const { return Clock::now() + options_.timeout; }

  std::vector<Link*> links_;
  SparseClientOptions options_;
  const sparse::SparseModel& model_;
  Status broken_;
  std::vector<std::vector<float>> shard_keys_;      // per shard: its keys, as wire floats
  std::vector<std::vector<std::uint32_t>> places_;  // per shard: where they are in the batch
  std::vector<float> shard_globals_;                // one shard's globals from a pull reply
  std::array<float, kPsHeaderFloats> header_{};     // the header sent or received last
  std::vector<float> values_;                       // one shard's slots or gradients
  std::vector<std::uint64_t> shard_key_counts_;     // per shard: keys held, as last replied
  std::vector<std::uint64_t> pulled_at_;            // per shard: g of the last pull's reply
  std::uint64_t clock_ = 0;                         // pushes made
  std::uint32_t vote_ = kNoVote;                    // sync: the vote the next push carries
  std::optional<train::StopReason> agreed_;         // sync: as the last push's answer said
  mutable std::mutex stats_mu_;
  train::CommStats stats_;  // guarded by stats_mu_
};

}  // namespace dtrain::dist
