// OverlappedSyncStrategy: mode = "sync", allreduce = "ring", with [cluster] bucket_bytes > 0: the
// replicas exchange their gradients as SyncAllReduceStrategy (uncompressed, across hosts: over
// the job's ring, or, with several replicas on each host, within the host and then across) or
// CompressedSyncStrategy (with [cluster] compression, wherever they run) does, but bucket by
// bucket (gradient_buckets.h) while the backward pass still runs. Each layer's gradient is final
// once its backward is done (Network::WatchGradient); as soon as the pass has finished a bucket, a
// thread of this strategy weights it (ShareWeight) and exchanges it — averages it (MeanCollective),
// or compresses it and exchanges the compressed form (GradientCompressor::ExchangePart over the
// bucket's tensors, with their error feedback and PowerSGD's warm-started Qs) — while the
// training thread computes the layers below. Apply posts what is left, waits for the last
// bucket, then clips and steps as every sync replica does.
//
//   auto sync = std::make_unique<OverlappedSyncStrategy>(
//       ring, PlanBuckets(starts, n, bucket_bytes / 4), MakeOptimizer(opts, 0, n), clip_norm);
//   // (or two_level, a HierarchicalAllReduce, in place of the ring: each bucket in two levels)
//   // or, compressing each bucket (one compressor over the whole plan, a part of it per bucket):
//   auto sync = std::make_unique<OverlappedSyncStrategy>(
//       ring, ring, PlanBuckets(starts, n, bucket_bytes / 4),
//       std::make_unique<GradientCompressor>(PlanCompression(tensors, settings), settings, seed),
//       MakeOptimizer(opts, 0, n), clip_norm);
//   Trainer trainer(model, options, train, &test, scaling, *sync);  // it calls DuringPass()
//
// Bits: every replica ends each step with the same mean, so replicas stay bitwise identical, and
// a run repeats itself exactly (the buckets and their ops depend only on the model and
// bucket_bytes). Each bucket is summed in its own ring order, so with three or more replicas a
// mean rounds differently from one whole-gradient all-reduce (SyncAllReduceStrategy, or
// HostSyncStrategy on one host; CompressedSyncStrategy's PowerSGD factors and warm-up means);
// with two it is the same (a + b == b + a), and so are bf16's and topk's gathered sums at any
// world (summed value by value in rank order). Two levels of two (2 hosts x 2 replicas) sum each
// value as (a + b) + (c + d) whatever the buckets: the same bits as one whole-gradient op.
// Votes: uncompressed, the stop and checkpoint votes ride after the gradient (GradientTail,
// VotingAllReduce's floats) in the first bucket's op, cast when the step starts; compressed, with
// the first bucket's first op (CompressingRing), cast by the exchange thread — proposals come
// from the training thread between steps, while the exchange thread is idle.
// Checkpoints (compressed): the compressor's state as CompressedSyncStrategy keeps it (every
// replica's residual, rank by rank, then the Qs in plan order), whatever the buckets, so a job
// resumes exactly from either strategy's checkpoint with any bucket_bytes.
// Stats: comm_seconds is the time the exchange thread spent in ops, compression_seconds the time
// it spent compressing, exposed_seconds what the training thread waited for both in Apply (the
// exchange the pass did not hide).
// A failed op (a dead peer, a timeout) fails that step's Apply with the ring's error; the ring
// refuses later ops.
//
// Threads: one training thread calls everything; the exchange thread is this object's own and
// touches only the buckets it was handed (the pass writes only those below them), and the
// compressor only while a step's buckets are under way. Compression runs on the exchange thread
// alone (no ShareThreads: the team computes the pass meanwhile). The ring (or collective) must
// outlive the strategy and is used by no one else.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "core/compress/gradient_compressor.h"
#include "core/dist/compressing_ring.h"
#include "core/dist/gradient_buckets.h"
#include "core/dist/mean_collective.h"
#include "core/dist/ring_allreduce.h"
#include "core/dist/voting_allreduce.h"
#include "core/optim/optimizer.h"
#include "core/train/strategy.h"

namespace dtrain::dist {

class OverlappedSyncStrategy final : public train::Strategy, private train::PassExchange {
 public:
  // `buckets`: PlanBuckets' plan of the model's gradient (at least one bucket), each averaged by
  // `mean` (a ring, or two levels).
  OverlappedSyncStrategy(MeanCollective& mean, std::vector<GradientBucket> buckets,
                         std::unique_ptr<optim::Optimizer> optimizer, float clip_norm);
  // Compressed: each bucket's tensors exchanged by `compressor` (its plan's tensors must tile the
  // gradient, and the buckets be whole tensors: PlanBuckets' whole layers are), its means by `mean`
  // (the ring, or two levels), its gathers on `ring`.
  OverlappedSyncStrategy(RingAllReduce& ring, MeanCollective& mean,
                         std::vector<GradientBucket> buckets,
                         std::unique_ptr<compress::GradientCompressor> compressor,
                         std::unique_ptr<optim::Optimizer> optimizer, float clip_norm);
  ~OverlappedSyncStrategy() override;
  OverlappedSyncStrategy(const OverlappedSyncStrategy&) = delete;
  OverlappedSyncStrategy& operator=(const OverlappedSyncStrategy&) = delete;

  Status Apply(std::int64_t step, std::span<float> params, std::span<float> grad, float lr,
               const train::StepShare& share) override;
  optim::Optimizer* LocalOptimizer() override { return local_.LocalOptimizer(); }
  std::size_t GradientTail() const override {
    return compressor_ == nullptr ? VotingAllReduce::kVoteFloats : 0;
  }
  bool ProposeStop(train::StopReason reason) override {
    votes().Propose(reason);
    return true;
  }
  std::optional<train::StopReason> AgreedStop() const override { return votes().agreed(); }
  train::CommStats Stats() const override;
  train::PassExchange* DuringPass() override { return this; }

  // Compressed: the compressor's state, checkpointed together (see CompressedSyncStrategy).
  bool CollectiveCheckpoints() const override { return compressor_ != nullptr; }
  void ProposeCheckpoint() override { votes().ProposeCheckpoint(); }
  bool CheckpointAgreed() const override { return votes().checkpoint_agreed(); }
  Result<std::vector<std::vector<float>>> CheckpointState() override;
  Status RestoreState(std::span<const std::span<const float>> state) override;

  // Null when uncompressed.
  compress::GradientCompressor* compressor() { return compressor_.get(); }

 private:
  // train::PassExchange
  void Start(std::int64_t step, std::span<float> grad, const train::StepShare& share,
             bool measure) override;
  void Finished(std::size_t begin) override;
  double SquaredNorm() const override { return squared_norm_; }

  OverlappedSyncStrategy(MeanCollective& mean, RingAllReduce* ring,
                         std::vector<GradientBucket> buckets,
                         std::unique_ptr<compress::GradientCompressor> compressor,
                         std::unique_ptr<optim::Optimizer> optimizer, float clip_norm);
  // The votes: the compressor's collective's, or (uncompressed) votes_.
  VotingAllReduce& votes() { return exchange_ != nullptr ? exchange_->votes() : votes_; }
  const VotingAllReduce& votes() const {
    return exchange_ != nullptr ? exchange_->votes() : votes_;
  }
  // Hands the exchange thread every bucket not yet posted that begins at or after `begin`.
  void Post(std::size_t begin);
  void ExchangeLoop();
  // Weights bucket b of the current step, measures it if asked, and exchanges it: averaged over
  // the ring, or compressed.
  Status Exchange(std::size_t b);
  // Uncompressed: bucket b averaged by one op of mean_ (the first bucket's with the votes).
  Status Average(std::size_t b, std::span<float> values);

  MeanCollective& mean_;
  const std::vector<GradientBucket> buckets_;
  train::LocalStrategy local_;  // the clip-and-step every replica takes
  // Uncompressed: the votes, cast and read around mean_'s ops (which it does not run itself).
  VotingAllReduce votes_;
  // Compressed: the compressor's collective over the ring, with the votes; null uncompressed.
  std::unique_ptr<CompressingRing> exchange_;
  std::unique_ptr<compress::GradientCompressor> compressor_;  // null: uncompressed
  std::vector<compress::PlanPart> parts_;  // compressed: bucket b's tensors of the plan
  // Compressed: what the uncompressed buckets would send a step, and so far.
  std::uint64_t uncompressed_bytes_per_step_ = 0;
  std::uint64_t uncompressed_bytes_ = 0;

  // The current step, set by Start before any bucket of it is posted.
  bool started_ = false;
  std::int64_t step_ = 0;
  std::span<float> grad_;  // with the GradientTail() floats after it
  float weight_ = 1.0f;
  bool measure_ = false;
  double squared_norm_ = 0.0;  // the last measured step's

  std::mutex mu_;
  std::condition_variable posted_cv_;  // the exchange thread waits for a bucket or shutdown
  std::condition_variable done_cv_;    // Apply waits for the last bucket
  std::size_t posted_ = 0;             // buckets of the current step handed over (guarded)
  std::size_t done_ = 0;               // of them, exchanged or given up (guarded)
  bool shutdown_ = false;              // guarded
  Status failure_;                     // the step's first failed op (guarded)
  train::CommStats step_stats_;        // the exchange thread's costs this step (guarded)
  double step_squared_ = 0.0;          // the measured buckets' squared norms (guarded)
  train::CommStats stats_;             // the training thread's totals (compressed: exposed only)
  std::thread thread_;
};

}  // namespace dtrain::dist
