// How a sparse model's keys are spread over parameter-server shards, and a KeyTable's state cut
// into shards' parts and joined back (checkpoints). A key belongs to shard
// SplitMix64(key) mod shards: keys are scattered evenly whatever their order, so the shards hold
// about as many keys each even where the data's frequent features have the small indices (power
// laws, libsvm files sorted by frequency); a contiguous range per shard would not be balanced.
// Shard 0 also holds the model's globals.
//
//   int k = ShardOfKey(key, shards);
//   KeyTableState mine = ShardPart(whole, k, shards, width, global_width);
//   KeyTableState whole = JoinShardParts(parts, width, global_width);
//
// Pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/sparse/key_table.h"

namespace dtrain::sparse {

int ShardOfKey(std::uint32_t key, int shards);

// The keys of `whole` that shard `shard` of `shards` holds, with their slots and state; the
// globals (and their state) for shard 0, the initial ones (`initial`'s) for the others.
KeyTableState ShardPart(const KeyTableState& whole, int shard, int shards, std::size_t width,
                        const KeyTableState& initial);
// The shards' parts as one state: keys in shard order, then each shard's own order; globals
// from part 0.
KeyTableState JoinShardParts(std::span<const KeyTableState> parts, std::size_t width,
                             std::size_t global_width);

}  // namespace dtrain::sparse
