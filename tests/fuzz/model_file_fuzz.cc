// Fuzz target: the model-file reader (core/train/model_file.h, format in
// core/train/model_format.md). Each input is decoded as it is and with its CRC fixed up, and
// a file that decodes must round-trip (round_trip.h).
// Invariants: no crash, no leak, no allocation of a size the input does not hold.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/train/model_file.h"
#include "round_trip.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dtrain::fuzz::FuzzRoundTrip(std::string_view(reinterpret_cast<const char*>(data), size),
                              dtrain::train::DecodeModelFile, dtrain::train::EncodeModelFile);
  return 0;
}
