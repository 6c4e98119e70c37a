// HostGroups: which ranks of a sync ring share a host, and whether their all-reduce can go in two
// levels (hierarchical_allreduce.h): within each host first, then one host's contribution per
// chunk across hosts.
//
//   std::vector<std::uint64_t> keys = ...;   // HostKey(ThisHost()) of every rank, by rank
//   std::optional<HostGroups> groups = HostGroups::Plan(keys);
//   if (groups) { groups->LocalRing(rank); groups->CrossRing(rank); }
//
// Invariants: groups are ordered by their smallest rank, and the ranks within a group by rank; a
// plan exists only for h >= 2 hosts that each run the same r >= 2 ranks (otherwise the flat ring
// is the better one, or the only one that fits). Every rank computes the same plan from the same
// keys. Pure values and functions: safe for concurrent use.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/dist/same_host.h"

namespace dtrain::dist {

// One number per host identity (equal identities, equal keys), to compare ranks' hosts by.
std::uint64_t HostKey(const HostIdentity& host);

class HostGroups {
 public:
  // The groups of the ranks whose host keys are `keys` (keys[r]: rank r's), or nullopt when the
  // job is not h >= 2 hosts of r >= 2 ranks each.
  static std::optional<HostGroups> Plan(std::span<const std::uint64_t> keys);

  int hosts() const { return static_cast<int>(groups_.size()); }
  int per_host() const { return static_cast<int>(groups_.front().size()); }
  // The ranks of `rank`'s host, by rank: its ring within the host.
  const std::vector<int>& LocalRing(int rank) const;
  // Rank `rank`'s host, by group order: also its position in its ring across hosts.
  int Host(int rank) const { return group_of_[static_cast<std::size_t>(rank)]; }
  // Rank `rank`'s position in its host's ring.
  int LocalIndex(int rank) const { return local_index_[static_cast<std::size_t>(rank)]; }
  // The ranks at `rank`'s local index on every host, in group order: its ring across hosts.
  std::vector<int> CrossRing(int rank) const;

 private:
  explicit HostGroups(std::vector<std::vector<int>> groups, std::size_t world);

  std::vector<std::vector<int>> groups_;  // groups_[g][i]: the rank at index i on host g
  std::vector<int> group_of_;             // by rank
  std::vector<int> local_index_;          // by rank
};

}  // namespace dtrain::dist
