// What the file-format fuzz targets share: decode the input as it is, and again with its last
// four bytes replaced by the CRC-32 of the rest (so mutations get past the checksum to the fields
// behind it); whatever decodes must encode, decode again and encode to the same bytes.
//
//   FuzzRoundTrip(bytes, DecodeModelFile, EncodeModelFile);   // traps on a broken round trip
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/codec/bytes.h"

namespace dtrain::fuzz {

template <typename Decode, typename Encode>
void DecodeAndRoundTrip(std::string_view bytes, Decode decode, Encode encode) {
  auto decoded = decode(bytes);
  if (!decoded.ok()) return;
  const std::string encoded = encode(decoded.value());
  auto again = decode(encoded);
  if (!again.ok() || encode(again.value()) != encoded) __builtin_trap();
}

template <typename Decode, typename Encode>
void FuzzRoundTrip(std::string_view bytes, Decode decode, Encode encode) {
  DecodeAndRoundTrip(bytes, decode, encode);
  if (bytes.size() < 4) return;
  std::string fixed(bytes.substr(0, bytes.size() - 4));
  const std::uint32_t crc = codec::Crc32(fixed);
  for (int i = 0; i < 4; ++i) fixed.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  DecodeAndRoundTrip(fixed, decode, encode);
}

}  // namespace dtrain::fuzz
