// HierarchicalSyncStrategy: mode = "sync", allreduce = "ring", hierarchy = "auto", when the job's
// replicas run on h >= 2 hosts with the same r >= 2 on each (HostGroups). A step's gradient is
// weighted as SyncAllReduceStrategy weighs it, averaged by HierarchicalAllReduce (within the host
// over shared memory, across hosts one chunk per replica), then clipped and applied by the same
// optimizer on every replica: replicas stay bitwise identical. The network carries per step what
// h single replicas would send; the sums are in another order than one flat ring's, so a job's
// bits may differ from the same job under hierarchy = "flat".
//
//   Result<std::optional<HostGroups>> groups = AgreeHostGroups(ring);   // collective
//   if (groups.ok() && groups.value()) {
//     Result<std::unique_ptr<HierarchicalSyncStrategy>> sync = MakeHierarchicalSync(
//         *groups.value(), {.rank = rank, .endpoints = workers, .listener = &mine, ...},
//         MakeOptimizer(opts, 0, n), clip_norm);
//   }
//
// Stop votes ride in the first two of the gradient's tail floats, summed with it (the third,
// a checkpoint vote, stays 0: sync ring jobs checkpoint without a vote). CommStats: bytes_sent and
// bytes_received count what went over the ring across hosts only (the network); the rings within
// the host (shared memory) are not counted; wait_seconds adds both levels' waits.
// AgreeHostGroups runs on the job's ring after JoinRing, so every rank has accepted its ring's
// connections before any rank joins the two levels' rings (ids 1 within the host, 2 across).
// One thread at a time (the training thread). The strategy owns both rings and their links.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dist/hierarchical_allreduce.h"
#include "core/dist/host_groups.h"
#include "core/dist/link.h"
#include "core/dist/peer_links.h"
#include "core/dist/ring_allreduce.h"
#include "core/dist/stop_votes.h"
#include "core/dist/voting_allreduce.h"
#include "core/optim/optimizer.h"
#include "core/status.h"
#include "core/train/strategy.h"

namespace dtrain::dist {

// Every rank's host, agreed over `ring` (an all-gather of HostKey(ThisHost())): the two-level
// plan, or nullopt where the flat ring is the one to use. Collective: every rank of the ring
// calls it, after JoinRing.
Result<std::optional<HostGroups>> AgreeHostGroups(RingAllReduce& ring);

// Where this process joins the rings of the two levels: as JoinRings takes it.
struct TwoLevelJoin {
  int rank = 0;
  std::vector<Endpoint> endpoints;  // every worker's, by rank
  const PeerListener* listener = nullptr;
  Deadline deadline{};
  std::string token;
  LinkTransport transport = LinkTransport::kAuto;
  bool checksum = true;  // Link::SetSendChecksums of every link
  RingOptions ring_options;
};

class HierarchicalSyncStrategy final : public train::Strategy {
 public:
  static constexpr std::size_t kVoteFloats = VotingAllReduce::kVoteFloats;

  Status Apply(std::int64_t step, std::span<float> params, std::span<float> grad, float lr,
               const train::StepShare& share) override;
  std::size_t GradientTail() const override { return kVoteFloats; }
  optim::Optimizer* LocalOptimizer() override { return local_.LocalOptimizer(); }
  bool ProposeStop(train::StopReason reason) override {
    votes_.Propose(reason);
    return true;
  }
  std::optional<train::StopReason> AgreedStop() const override { return agreed_; }
  train::CommStats Stats() const override { return stats_; }

  // "h hosts x r workers: within the host over <transport>, across hosts over <transport>".
  std::string Describe() const;

 private:
  friend Result<std::unique_ptr<HierarchicalSyncStrategy>> MakeHierarchicalSync(
      const HostGroups& groups, const TwoLevelJoin& join,
      std::unique_ptr<optim::Optimizer> optimizer, float clip_norm);
  HierarchicalSyncStrategy(int rank, const HostGroups& groups, std::vector<RingLinks> links,
                           const RingOptions& options, std::unique_ptr<optim::Optimizer> optimizer,
                           float clip_norm);

  std::vector<RingLinks> links_;  // [0]: within the host, [1]: across hosts
  RingAllReduce local_ring_;
  RingAllReduce cross_ring_;
  HierarchicalAllReduce two_level_;
  train::LocalStrategy local_;  // the clip-and-step every replica takes
  StopVotes votes_;
  std::optional<train::StopReason> agreed_;
  train::CommStats stats_;
};

// Joins this rank's ring within its host and its ring across hosts (JoinRings, ring ids 1 and
// 2) and builds the strategy over them. Collective: every rank of the plan calls it.
Result<std::unique_ptr<HierarchicalSyncStrategy>> MakeHierarchicalSync(
    const HostGroups& groups, const TwoLevelJoin& join, std::unique_ptr<optim::Optimizer> optimizer,
    float clip_norm);

}  // namespace dtrain::dist
