// Top-k selection for sparse gradient exchange (Deep Gradient Compression, Lin et al. 2018): the k
// values of largest magnitude, and sending them as (index, value) pairs.
//
//   std::vector<std::uint32_t> idx(k);
//   SelectTopK(values, idx);                  // ascending indices
//   WriteSparse(values, idx, message);        // message: k indices (as bit patterns), k values
//   AddSparse(message, k, 0.25f, sum);        // sum[idx[j]] += 0.25f * value[j]
//
// Deterministic: ties in magnitude go to the lower index, NaN counts as the largest (every NaN
// alike, above infinity); the same selection on every CPU. O(n): a radix select of the k-th
// largest magnitude; for many values and few taken (k <= n / 64), first a bound from every 16th
// value, so that one pass keeps the few values that reach it and the select runs among those
// (the full select where fewer than k do). Buffers are per thread and reused. Tensors of up to
// 2^32 - 1 values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace dtrain::compress {

// indices (size k <= values.size()) = the positions of the k values of largest |value|, ascending.
void SelectTopK(std::span<const float> values, std::span<std::uint32_t> indices);
// message (2 * indices.size() floats) = the indices (their bits in float slots), then the values
// at them.
void WriteSparse(std::span<const float> values, std::span<const std::uint32_t> indices,
                 std::span<float> message);
// out[index j] += scale * value j for the k pairs of a message WriteSparse wrote (indices beyond
// out are ignored).
void AddSparse(std::span<const float> message, std::size_t k, float scale, std::span<float> out);

}  // namespace dtrain::compress
