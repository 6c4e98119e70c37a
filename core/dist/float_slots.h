// Integers and doubles carried in float messages as bit patterns (the floats are only moved,
// never computed on): a u32 in one slot, a u64 or a double in two, low word first — how the
// data plane's headers and a checkpoint's L-BFGS scalars hold them.
//
//   PutU64(header, 4, pass);  std::uint64_t back = GetU64(header, 4);
//
// Pure functions; the caller keeps slots in range. A message header starts with its protocol's
// magic, which CheckMagic verifies before anything else is read.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/status.h"

namespace dtrain::dist {

inline void PutU32(std::span<float> out, std::size_t slot, std::uint32_t v) {
  out[slot] = std::bit_cast<float>(v);
}
inline std::uint32_t GetU32(std::span<const float> in, std::size_t slot) {
  return std::bit_cast<std::uint32_t>(in[slot]);
}
inline void PutU64(std::span<float> out, std::size_t slot, std::uint64_t v) {
  PutU32(out, slot, static_cast<std::uint32_t>(v));
  PutU32(out, slot + 1, static_cast<std::uint32_t>(v >> 32));
}
inline std::uint64_t GetU64(std::span<const float> in, std::size_t slot) {
  return std::uint64_t{GetU32(in, slot)} | (std::uint64_t{GetU32(in, slot + 1)} << 32);
}
inline void PutF64(std::span<float> out, std::size_t slot, double v) {
  PutU64(out, slot, std::bit_cast<std::uint64_t>(v));
}
inline double GetF64(std::span<const float> in, std::size_t slot) {
  return std::bit_cast<double>(GetU64(in, slot));
}

// Ok if slot `slot` holds `magic`; otherwise "bad <what> header: magic 0x..., not 0x...".
Status CheckMagic(std::span<const float> in, std::size_t slot, std::uint32_t magic,
                  std::string_view what);

}  // namespace dtrain::dist
