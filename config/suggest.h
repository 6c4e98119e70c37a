// ClosestName: the "did you mean ...?" of configuration errors.
//
//   const std::vector<std::string_view> keys = {"epochs", "steps", "batch_size"};
//   ClosestName("batchsize", keys);  // "batch_size"
//   ClosestName("colour", keys);     // "": nothing is close enough to be a typo
//
// Distance is the optimal-string-alignment edit distance over ASCII-lowercased names
// (insertions, deletions, substitutions and swaps of two adjacent characters cost 1 each). A
// candidate counts as close when that distance is at most 1 + typed.size() / 4 (so 1 for names
// of up to 3 characters, at most 3) and smaller than typed.size(); the closest wins, the earlier
// one on a tie. Pure functions: safe for concurrent use.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace dtrain::config {

std::size_t EditDistance(std::string_view a, std::string_view b);

// The closest candidate, or an empty view when none is close.
std::string_view ClosestName(std::string_view typed, std::span<const std::string_view> candidates);

}  // namespace dtrain::config
