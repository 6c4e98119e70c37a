// Fuzz target: the NumPy header parser (core/data/npy_header.h ParseNpyHeader) and the .npz
// directory reader (core/data/npz_directory.h FindNpzMember) over arbitrary bytes: each input is
// parsed as a .npy file's start, and as an archive whose member "x" is then parsed as one.
// Invariants: no crash, no read outside the input; a header that parses has a data offset within
// the input and a dtype of 1, 2, 4 or 8 bytes; a member that is found lies within the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "core/data/npy_header.h"
#include "core/data/npz_directory.h"

namespace {

void CheckHeader(std::span<const std::uint8_t> bytes) {
  const auto header = dtrain::data::ParseNpyHeader(bytes);
  if (!header.ok()) return;
  const dtrain::data::NpyHeader& h = header.value();
  if (h.data_offset > bytes.size()) std::abort();
  const int b = h.dtype.bytes;
  if (b != 1 && b != 2 && b != 4 && b != 8) std::abort();
  if (h.major_version < 1 || h.major_version > 3) std::abort();
  (void)h.DataBytes();  // checked not to overflow by the parser
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  CheckHeader(bytes);
  const auto member = dtrain::data::FindNpzMember(bytes, "x");
  if (member.ok()) {
    const dtrain::data::NpzMember& m = member.value();
    if (m.offset > size || m.size > size - m.offset) std::abort();
    CheckHeader(bytes.subspan(m.offset, m.size));
  }
  return 0;
}
