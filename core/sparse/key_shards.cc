#include "core/sparse/key_shards.h"

#include "core/data/random.h"

namespace dtrain::sparse {

int ShardOfKey(std::uint32_t key, int shards) {
  return static_cast<int>(data::SplitMix64::Finalize(key) % static_cast<std::uint64_t>(shards));
}

KeyTableState ShardPart(const KeyTableState& whole, int shard, int shards, std::size_t width,
                        const KeyTableState& initial) {
  const std::size_t rows = whole.keys.size();
  const KeyTableState& globals_from = shard == 0 ? whole : initial;
  KeyTableState part;
  part.state.resize(whole.state.size());
  for (std::size_t r = 0; r < rows; ++r) {
    if (ShardOfKey(whole.keys[r], shards) != shard) continue;
    part.keys.push_back(whole.keys[r]);
    const auto from = static_cast<std::ptrdiff_t>(r * width);
    part.slots.insert(part.slots.end(), whole.slots.begin() + from,
                      whole.slots.begin() + from + static_cast<std::ptrdiff_t>(width));
    for (std::size_t v = 0; v < whole.state.size(); ++v) {
      part.state[v].insert(part.state[v].end(), whole.state[v].begin() + from,
                           whole.state[v].begin() + from + static_cast<std::ptrdiff_t>(width));
    }
  }
  part.globals = globals_from.globals;
  for (std::size_t v = 0; v < whole.state.size(); ++v) {
    const std::vector<float>& source = globals_from.state[v];
    part.state[v].insert(part.state[v].end(),
                         source.end() - static_cast<std::ptrdiff_t>(part.globals.size()),
                         source.end());
  }
  return part;
}

KeyTableState JoinShardParts(std::span<const KeyTableState> parts, std::size_t width,
                             std::size_t global_width) {
  KeyTableState whole;
  if (parts.empty()) return whole;
  whole.state.resize(parts.front().state.size());
  for (const KeyTableState& part : parts) {
    whole.keys.insert(whole.keys.end(), part.keys.begin(), part.keys.end());
    whole.slots.insert(whole.slots.end(), part.slots.begin(), part.slots.end());
    for (std::size_t v = 0; v < whole.state.size(); ++v) {
      const std::size_t rows = part.keys.size() * width;
      whole.state[v].insert(whole.state[v].end(), part.state[v].begin(),
                            part.state[v].begin() + static_cast<std::ptrdiff_t>(rows));
    }
  }
  whole.globals = parts.front().globals;
  for (std::size_t v = 0; v < whole.state.size(); ++v) {
    const std::vector<float>& first = parts.front().state[v];
    whole.state[v].insert(whole.state[v].end(),
                          first.end() - static_cast<std::ptrdiff_t>(global_width), first.end());
  }
  return whole;
}

}  // namespace dtrain::sparse
