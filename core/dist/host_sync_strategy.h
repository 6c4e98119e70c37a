// HostSyncStrategy: mode = "sync", allreduce = "ring", when every replica runs on one host. The
// replicas' gradients live side by side in one shared-memory segment, and so do one copy of the
// parameters and of the optimizer's state. Once all replicas have arrived at a step (a barrier on
// counters in the segment), each reads every gradient where it lies, over its own part of the
// parameters (ShardRangeOf(params, world, rank)) only: it sums them block by block in the order
// the ring all-reduce would (for each float, starting from the rank whose chunk holds it), scales
// the sum to the mean, and feeds each block straight into its optimizer's step of that part
// (Optimizer::StepPart, on the shared state). No gradient or parameter is copied, the mean is
// never written out (except when clipping needs its norm first), and each replica's pass covers
// 1/world of the parameters, where the ring copies each gradient into a link and out again and
// every replica then steps all of them. A second barrier keeps any replica from reading the
// parameters, or overwriting its gradient, while another still steps its part. The bits are the
// ring's: a job computes the same whether its workers share a host or not.
//
// The parameters and the optimizer's state are shared once the trainer takes ParameterStorage()
// (it does for models without running statistics): the optimizer's state then moves into the
// segment too. A replica whose trainer keeps its own parameters (batchnorm's statistics are each
// replica's) keeps its own state and steps every float from the gradients in the segment
// (Optimizer::StepFromBlocks).
// Sharing the parameters took 2 MLP replicas' summed optimizer pass from 0.63-0.70 to
// 0.36-0.40 ms a step on 2 cores (bench/README.md).
//
//   Result<std::unique_ptr<train::Strategy>> sync =
//       MakeSyncStrategy(ring, links, MakeOptimizer(opts, 0, n), clip_norm, timeout);
//   Trainer trainer(model, options /* sharding = kGlobalBatches */, train, &test, scaling,
//                   *sync.value());  // the Trainer computes its gradient into the segment
//
// Replicas stay bitwise identical and train like one replica on the global batch, as with
// SyncAllReduceStrategy. Stop votes ride in the first three of each gradient's tail floats, which
// are as many as the ring's (VotingAllReduce::kVoteFloats: the last, a checkpoint vote, stays 0
// here), so that both sum each float in the same order. A replica that dies
// (its ring links hang up), a peer's failure (a flag in the segment) or a barrier that outlasts
// `timeout` fails the step with an error naming the rank; later steps fail at once.
//
// The segment's layout (version 2): a header of 128 bytes (magic "DHSY", version, world, the
// optimizer's state vectors, floats per gradient, the failed rank + 1), then per rank a cache
// line with its "arrived" counter and one with its "released" counter (the number of steps it has
// reached / finished reading), rounded up to 4 KiB; then `world` gradients of `floats` floats
// each, then the parameters, each 64-byte aligned; then the optimizer's state vectors, one after
// another (Optimizer::MoveStateTo). Set-up: rank 0 creates it under an unguessable name and passes
// the name around the ring (a message of 10 floats on the links, tagged 2^31 - 3); every rank opens
// it; two all-reduces over the ring agree that every rank is on this host and has it mapped; rank 0
// then unlinks the name.
//
// One thread at a time (the training thread). The ring and its links must outlive the strategy.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/dist/gradient_buckets.h"
#include "core/dist/link.h"
#include "core/dist/ring_allreduce.h"
#include "core/dist/shard_ranges.h"
#include "core/dist/shm_segment.h"
#include "core/dist/stop_votes.h"
#include "core/dist/voting_allreduce.h"
#include "core/optim/optimizer.h"
#include "core/status.h"
#include "core/train/strategy.h"

namespace dtrain::dist {

namespace internal {
struct HostSyncHeader;
}

// Whether MakeSyncStrategy may share one parameter copy among a host's replicas. kNever: each
// replica keeps whole parameters and optimizer state of its own, stepped only after the whole
// exchange succeeded (an elastic job, whose survivors carry on from one replica's state).
enum class HostSharing { kWhereAllLocal, kNever };

class HostSyncStrategy final : public train::Strategy {
 public:
  static constexpr std::size_t kVoteFloats = VotingAllReduce::kVoteFloats;

  HostSyncStrategy(const HostSyncStrategy&) = delete;
  HostSyncStrategy& operator=(const HostSyncStrategy&) = delete;

  Status Apply(std::int64_t step, std::span<float> params, std::span<float> grad, float lr,
               const train::StepShare& share) override;
  std::size_t GradientTail() const override { return kVoteFloats; }
  std::span<float> GradientStorage(std::size_t floats) override;
  // The shared parameters; moves the optimizer's state into the segment (see above). Every
  // replica's trainer takes them or none does (they build the same model).
  std::span<float> ParameterStorage(std::size_t floats) override;
  Status ParametersWritten() override;  // a barrier, when the parameters are shared
  optim::Optimizer* LocalOptimizer() override { return local_.LocalOptimizer(); }
  bool ProposeStop(train::StopReason reason) override {
    votes_.Propose(reason);
    return true;
  }
  std::optional<train::StopReason> AgreedStop() const override { return agreed_; }
  train::CommStats Stats() const override { return stats_; }

 private:
  friend Result<std::unique_ptr<train::Strategy>> MakeSyncStrategy(
      RingAllReduce& ring, const RingLinks& links, std::unique_ptr<optim::Optimizer> optimizer,
      float clip_norm, std::chrono::milliseconds timeout, std::vector<GradientBucket> buckets,
      HostSharing sharing);
  HostSyncStrategy(ShmMapping segment, int rank, int world, std::size_t params, std::size_t stride,
                   const RingLinks& links, std::unique_ptr<optim::Optimizer> optimizer,
                   float clip_norm, std::chrono::milliseconds timeout);
  // Waits until every rank's counter (arrived or released) reaches `seq`; `step` names the
  // barrier in errors (-1: ParametersWritten's, "start").
  Status AwaitAll(bool arrived, std::uint64_t seq, std::int64_t step);
  // Records that `rank` failed (first failure wins) and returns `error`.
  Status Fail(int rank, Status error);
  // Rank r's gradient and votes in the segment.
  float* Gradient(int r) const { return gradients_ + static_cast<std::size_t>(r) * stride_; }
  // This replica's step of its own part of the shared parameters, from the mean gradient.
  void StepOwnPart(std::span<float> params, float lr);
  // The mean gradient's floats [offset, offset + out.size()) into `out`, summed in the ring's
  // order (so the same bits as SyncAllReduceStrategy computes).
  void MeanOf(std::size_t offset, std::span<float> out) const;

  ShmMapping segment_;
  internal::HostSyncHeader* header_;
  int rank_;
  int world_;
  std::size_t params_;    // floats of gradient, before the vote tail
  std::size_t stride_;    // floats from one rank's gradient to the next
  float* gradients_;      // rank 0's, in the segment
  float* shared_params_;  // in the segment, after the gradients; the optimizer's state follows
  ShardRange own_part_;   // of the parameters: what this replica steps when they are shared
  Link* left_;
  Link* right_;
  // The ring's chunks of a gradient and its vote tail: the order MeanOf sums each float in.
  std::vector<ShardRange> chunks_;
  train::LocalStrategy local_;  // the clip-and-step every replica takes
  std::vector<float> mean_;     // the written-out mean, when clipping needs it (else empty)
  std::chrono::milliseconds timeout_;
  std::uint64_t seq_ = 0;  // barriers passed, each counted in arrived and released
  bool shared_ = false;    // the trainer took ParameterStorage()
  StopVotes votes_;
  std::optional<train::StopReason> agreed_;
  Status broken_;
  train::CommStats stats_;
};

// The strategy of an uncompressed sync job whose gradients `mean` averages (its ring, or two
// levels: TwoLevelRing): OverlappedSyncStrategy over `buckets` when there are several, else
// SyncAllReduceStrategy. `mean` must outlive it.
std::unique_ptr<train::Strategy> MakeMeanSyncStrategy(MeanCollective& mean,
                                                      std::vector<GradientBucket> buckets,
                                                      std::unique_ptr<optim::Optimizer> optimizer,
                                                      float clip_norm);

// The synchronous ring strategy for these replicas: HostSyncStrategy when every rank runs on
// this host, the segment could be shared and `sharing` allows it; otherwise (one host per rank,
// transport = "tcp", no shared memory, or kNever) MakeMeanSyncStrategy over the ring. Collective:
// every rank calls it, after JoinRing, with the same buckets and `sharing`.
Result<std::unique_ptr<train::Strategy>> MakeSyncStrategy(
    RingAllReduce& ring, const RingLinks& links, std::unique_ptr<optim::Optimizer> optimizer,
    float clip_norm, std::chrono::milliseconds timeout, std::vector<GradientBucket> buckets = {},
    HostSharing sharing = HostSharing::kWhereAllLocal);

}  // namespace dtrain::dist
