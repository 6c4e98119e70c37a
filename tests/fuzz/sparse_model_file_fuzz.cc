// Fuzz target: the sparse model-file reader (core/sparse/sparse_model_file.h, format in
// core/train/model_format.md, "Sparse model files"). Each input is decoded twice: as it is, and
// with its last four bytes replaced by the CRC of the rest, so that mutations get past the checksum
// to the fields behind it. A file that decodes must encode, decode again, and encode to the same
// bytes. Invariants: no crash, no leak, no allocation of a size the input does not hold.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/codec/bytes.h"
#include "core/sparse/sparse_model_file.h"

namespace {

void DecodeAndRoundTrip(std::string_view bytes) {
  using namespace dtrain::sparse;
  dtrain::Result<SparseModelFile> model = DecodeSparseModelFile(bytes);
  if (!model.ok()) return;
  const std::string encoded = EncodeSparseModelFile(model.value());
  dtrain::Result<SparseModelFile> again = DecodeSparseModelFile(encoded);
  if (!again.ok() || EncodeSparseModelFile(again.value()) != encoded) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  DecodeAndRoundTrip(bytes);
  if (size >= 4) {
    std::string fixed(bytes.substr(0, size - 4));
    const std::uint32_t crc = dtrain::codec::Crc32(fixed);
    for (int i = 0; i < 4; ++i) fixed.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
    DecodeAndRoundTrip(fixed);
  }
  return 0;
}
