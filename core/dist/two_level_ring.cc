#include "core/dist/two_level_ring.h"

#include "core/dist/float_slots.h"
#include "core/dist/same_host.h"

namespace dtrain::dist {
namespace {

// The all-gather of host keys, beside the tags MakeSyncStrategy uses on the same ring.
constexpr std::uint32_t kHostKeysOp = RingAllReduce::kMaxOp - 3;
constexpr std::uint32_t kLocalRingId = 1;
constexpr std::uint32_t kCrossRingId = 2;

}  // namespace

Result<std::optional<HostGroups>> AgreeHostGroups(RingAllReduce& ring) {
  Result<HostIdentity> me = ThisHost();
  if (!me.ok()) return me.status();
  const auto world = static_cast<std::size_t>(ring.world());
  std::vector<float> keys(2 * world, 0.0f);  // a u64 per rank, in two slots
  PutU64(keys, 2 * static_cast<std::size_t>(ring.rank()), HostKey(me.value()));
  if (world > 1) {
    if (Status gathered = ring.AllGather(keys, kHostKeysOp); !gathered.ok()) {
      return Status::Error("agreeing on the workers' hosts: " + gathered.message());
    }
  }
  std::vector<std::uint64_t> by_rank(world);
  for (std::size_t r = 0; r < world; ++r) by_rank[r] = GetU64(keys, 2 * r);
  return HostGroups::Plan(by_rank);
}

TwoLevelRing::TwoLevelRing(int rank, const HostGroups& groups, std::vector<RingLinks> links,
                           const RingOptions& options)
    : links_(std::move(links)),
      local_ring_(groups.LocalIndex(rank), groups.per_host(), links_[0].left, links_[0].right,
                  options),
      cross_ring_(groups.Host(rank), groups.hosts(), links_[1].left, links_[1].right, options),
      two_level_(local_ring_, cross_ring_) {}

std::string TwoLevelRing::Describe() const {
  return std::to_string(cross_ring_.world()) + " hosts x " + std::to_string(local_ring_.world()) +
         " workers: within the host over " + std::string(links_[0].right->Transport()) +
         ", across hosts over " + std::string(links_[1].right->Transport());
}

Result<std::unique_ptr<TwoLevelRing>> MakeTwoLevelRing(const HostGroups& groups,
                                                       const TwoLevelJoin& join) {
  const std::vector<RingMembers> rings{{.id = kLocalRingId, .ranks = groups.LocalRing(join.rank)},
                                       {.id = kCrossRingId, .ranks = groups.CrossRing(join.rank)}};
  Result<std::vector<RingLinks>> links = JoinRings(join.rank, rings, join.endpoints, *join.listener,
                                                   join.deadline, join.token, join.transport);
  if (!links.ok()) return Status::Error("two-level ring: " + links.status().message());
  for (const RingLinks& ring : links.value()) {
    for (const auto& link : ring.owned) link->SetSendChecksums(join.checksum);
  }
  return std::unique_ptr<TwoLevelRing>(
      new TwoLevelRing(join.rank, groups, std::move(links).value(), join.ring_options));
}

}  // namespace dtrain::dist
