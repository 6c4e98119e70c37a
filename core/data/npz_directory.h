// Finding one array in a NumPy .npz file (a zip archive of .npy files, as numpy.savez writes it),
// from the archive's bytes alone: its end-of-central-directory record (zip64 too), the central
// directory entry named "<name>.npy", and that member's local header. A pure function so it can
// be fuzzed (tests/fuzz/npy_header_fuzz.cc).
//
//   Result<NpzMember> m = FindNpzMember(file_bytes, "x");   // the member x.npy
//   ParseNpyHeader(file_bytes.subspan(m.value().offset, m.value().size)) ...
//
// Only stored (uncompressed) members are found: they can be memory-mapped in place. A member
// deflated by numpy.savez_compressed, an encrypted one, a missing one, or a directory or member
// that lies outside the file is an error saying which; no message quotes the archive's bytes
// (only `name`, which the caller gave).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"

namespace dtrain::data {

struct NpzMember {
  std::uint64_t offset = 0;  // of the member's data (an .npy file) from the archive's start
  std::uint64_t size = 0;    // its bytes, all within the archive
};

Result<NpzMember> FindNpzMember(std::span<const std::uint8_t> archive, const std::string& name);

}  // namespace dtrain::data
