#include "core/dist/host_groups.h"

#include <algorithm>

namespace dtrain::dist {
namespace {

constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ull;

void Mix(std::uint64_t& hash, std::span<const unsigned char> bytes) {
  for (unsigned char b : bytes) hash = (hash ^ b) * kFnvPrime;
}

void Mix(std::uint64_t& hash, std::uint64_t value) {
  unsigned char bytes[8];
  for (std::size_t i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(value >> (8 * i));
  Mix(hash, bytes);
}

}  // namespace

std::uint64_t HostKey(const HostIdentity& host) {
  // FNV-1a over the fields: the same in every process, whatever its library's std::hash.
  std::uint64_t hash = kFnvOffset;
  Mix(hash, host.boot_id.size());
  Mix(hash,
      std::span(reinterpret_cast<const unsigned char*>(host.boot_id.data()), host.boot_id.size()));
  Mix(hash, host.net_ns);
  Mix(hash, host.ipc_ns);
  return hash;
}

std::optional<HostGroups> HostGroups::Plan(std::span<const std::uint64_t> keys) {
  std::vector<std::vector<int>> groups;
  std::vector<std::uint64_t> group_keys;
  for (std::size_t r = 0; r < keys.size(); ++r) {
    const auto known = std::find(group_keys.begin(), group_keys.end(), keys[r]);
    if (known == group_keys.end()) {
      group_keys.push_back(keys[r]);
      groups.push_back({static_cast<int>(r)});
    } else {
      groups[static_cast<std::size_t>(known - group_keys.begin())].push_back(static_cast<int>(r));
    }
  }
  if (groups.size() < 2 || groups.front().size() < 2) return std::nullopt;
  const std::size_t per_host = groups.front().size();
  for (const std::vector<int>& group : groups) {
    if (group.size() != per_host) return std::nullopt;
  }
  return HostGroups(std::move(groups), keys.size());
}

HostGroups::HostGroups(std::vector<std::vector<int>> groups, std::size_t world)
    : groups_(std::move(groups)), group_of_(world), local_index_(world) {
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    for (std::size_t i = 0; i < groups_[g].size(); ++i) {
      const auto r = static_cast<std::size_t>(groups_[g][i]);
      group_of_[r] = static_cast<int>(g);
      local_index_[r] = static_cast<int>(i);
    }
  }
}

const std::vector<int>& HostGroups::LocalRing(int rank) const {
  return groups_[static_cast<std::size_t>(group_of_[static_cast<std::size_t>(rank)])];
}

std::vector<int> HostGroups::CrossRing(int rank) const {
  const auto i = static_cast<std::size_t>(LocalIndex(rank));
  std::vector<int> ring;
  for (const std::vector<int>& group : groups_) ring.push_back(group[i]);
  return ring;
}

}  // namespace dtrain::dist
