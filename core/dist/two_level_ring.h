// TwoLevelRing: the two rings of a sync ring job with hierarchy = "auto" whose replicas run on
// h >= 2 hosts with the same r >= 2 on each (HostGroups) — one within each host (shared memory
// where JoinRings made it with LinkTransport::kAuto), one across hosts at each local index — and
// the HierarchicalAllReduce over them, the MeanCollective that averages the job's gradients. The
// job's strategy is the flat ring's, over this collective instead of the ring:
// SyncAllReduceStrategy (the whole gradient after the pass), or OverlappedSyncStrategy (bucket by
// bucket during it). The network carries per step what h single replicas would send; the sums are
// in another order than one flat ring's, so a job's bits may differ from the same job under
// hierarchy = "flat". Replicas stay bitwise identical.
//
//   Result<std::optional<HostGroups>> groups = AgreeHostGroups(ring);   // collective
//   if (groups.ok() && groups.value()) {
//     Result<std::unique_ptr<TwoLevelRing>> rings = MakeTwoLevelRing(
//         *groups.value(), {.rank = rank, .endpoints = workers, .listener = &mine, ...});
//     SyncAllReduceStrategy sync(rings.value()->mean(), MakeOptimizer(opts, 0, n), clip_norm);
//   }
//
// Stop votes ride in the gradient's tail floats, as on the flat ring (VotingAllReduce). CommStats:
// bytes_sent and bytes_received count what went over the ring across hosts only (the network);
// the rings within the host are not counted; wait_seconds adds both levels' waits
// (HierarchicalAllReduce::LastCost).
// AgreeHostGroups runs on the job's ring after JoinRing, so every rank has accepted its ring's
// connections before any rank joins the two levels' rings (ids 1 within the host, 2 across).
// The rings are used by one thread at a time (the strategy's); this object owns them and their
// links, and must outlive the strategy over mean().
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dist/hierarchical_allreduce.h"
#include "core/dist/host_groups.h"
#include "core/dist/link.h"
#include "core/dist/peer_links.h"
#include "core/dist/ring_allreduce.h"
#include "core/status.h"

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

class TwoLevelRing {
 public:
  TwoLevelRing(const TwoLevelRing&) = delete;
  TwoLevelRing& operator=(const TwoLevelRing&) = delete;

  // The mean over every replica of the job, in two levels.
  HierarchicalAllReduce& mean() { return two_level_; }

  // "h hosts x r workers: within the host over <transport>, across hosts over <transport>".
  std::string Describe() const;

 private:
  friend Result<std::unique_ptr<TwoLevelRing>> MakeTwoLevelRing(const HostGroups& groups,
                                                                const TwoLevelJoin& join);
  TwoLevelRing(int rank, const HostGroups& groups, std::vector<RingLinks> links,
               const RingOptions& options);

  std::vector<RingLinks> links_;  // [0]: within the host, [1]: across hosts
  RingAllReduce local_ring_;
  RingAllReduce cross_ring_;
  HierarchicalAllReduce two_level_;
};

// Joins this rank's ring within its host and its ring across hosts (JoinRings, ring ids 1 and
// 2). Collective: every rank of the plan calls it.
Result<std::unique_ptr<TwoLevelRing>> MakeTwoLevelRing(const HostGroups& groups,
                                                       const TwoLevelJoin& join);

}  // namespace dtrain::dist
