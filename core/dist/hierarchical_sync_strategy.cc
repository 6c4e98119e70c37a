#include "core/dist/hierarchical_sync_strategy.h"

#include <chrono>

#include "core/dist/float_slots.h"
#include "core/dist/same_host.h"
#include "core/math/elementwise.h"

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

HierarchicalSyncStrategy::HierarchicalSyncStrategy(int rank, const HostGroups& groups,
                                                   std::vector<RingLinks> links,
                                                   const RingOptions& options,
                                                   std::unique_ptr<optim::Optimizer> optimizer,
                                                   float clip_norm)
    : links_(std::move(links)),
      local_ring_(groups.LocalIndex(rank), groups.per_host(), links_[0].left, links_[0].right,
                  options),
      cross_ring_(groups.Host(rank), groups.hosts(), links_[1].left, links_[1].right, options),
      two_level_(local_ring_, cross_ring_),
      local_(std::move(optimizer), clip_norm) {}

Status HierarchicalSyncStrategy::Apply(std::int64_t step, std::span<float> params,
                                       std::span<float> grad, float lr,
                                       const train::StepShare& share) {
  const float weight = train::ShareWeight(share, two_level_.world());
  if (weight != 1.0f) math::Scale(weight, grad);
  const std::span<float> buffer(grad.data(), grad.size() + kVoteFloats);
  votes_.Cast(
      std::span<float, StopVotes::kFloats>(buffer.data() + grad.size(), StopVotes::kFloats));
  buffer.back() = 0.0f;  // no checkpoint vote
  const auto op = static_cast<std::uint32_t>(step % RingAllReduce::kMaxOp);
  const auto start = Clock::now();
  Status reduced = two_level_.AllReduceMean(buffer, op);
  stats_.comm_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  const TwoLevelOpStats& cost = two_level_.last_op();
  stats_.wait_seconds += cost.local.wait_seconds + cost.cross.wait_seconds;
  stats_.bytes_sent += cost.cross.bytes_sent;
  stats_.bytes_received += cost.cross.bytes_received;
  if (!reduced.ok())
    return Status::Error("step " + std::to_string(step) + ": " + reduced.message());
  agreed_ = StopVotes::Agreed(buffer.subspan(grad.size()).first<StopVotes::kFloats>());
  return local_.Apply(step, params, grad, lr, share);
}

std::string HierarchicalSyncStrategy::Describe() const {
  return std::to_string(cross_ring_.world()) + " hosts x " + std::to_string(local_ring_.world()) +
         " workers: within the host over " + std::string(links_[0].right->Transport()) +
         ", across hosts over " + std::string(links_[1].right->Transport());
}

Result<std::unique_ptr<HierarchicalSyncStrategy>> MakeHierarchicalSync(
    const HostGroups& groups, const TwoLevelJoin& join, std::unique_ptr<optim::Optimizer> optimizer,
    float clip_norm) {
  const std::vector<RingMembers> rings{{.id = kLocalRingId, .ranks = groups.LocalRing(join.rank)},
                                       {.id = kCrossRingId, .ranks = groups.CrossRing(join.rank)}};
  Result<std::vector<RingLinks>> links = JoinRings(join.rank, rings, join.endpoints, *join.listener,
                                                   join.deadline, join.token, join.transport);
  if (!links.ok()) return Status::Error("two-level ring: " + links.status().message());
  for (const RingLinks& ring : links.value()) {
    for (const auto& link : ring.owned) link->SetSendChecksums(join.checksum);
  }
  return std::unique_ptr<HierarchicalSyncStrategy>(
      new HierarchicalSyncStrategy(join.rank, groups, std::move(links).value(), join.ring_options,
                                   std::move(optimizer), clip_norm));
}

}  // namespace dtrain::dist
