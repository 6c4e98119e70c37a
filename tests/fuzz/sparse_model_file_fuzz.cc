// Fuzz target: the sparse model-file reader (core/sparse/sparse_model_file.h, format in
// core/train/model_format.md, "Sparse model files"). Each input is decoded twice: as it is, and
// with its last four bytes replaced by the CRC of the rest, so that mutations get past the checksum
// to the fields behind it. A file that decodes must encode, decode again, and encode to the same
// bytes. Invariants: no crash, no leak, no allocation of a size the input does not hold.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/sparse/sparse_model_file.h"
#include "round_trip.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dtrain::fuzz::FuzzRoundTrip(std::string_view(reinterpret_cast<const char*>(data), size),
                              dtrain::sparse::DecodeSparseModelFile,
                              dtrain::sparse::EncodeSparseModelFile);
  return 0;
}
