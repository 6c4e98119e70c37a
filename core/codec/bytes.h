// Explicit little-endian encoding for dtrain's binary formats (checkpoints, model files, wire
// frames): fixed-width integers, IEEE-754 float vectors, length-prefixed strings, CRC32.
//
//   ByteWriter w;  w.U32(kVersion);  w.String(spec);  w.Floats(params);  w.U32(Crc32(w.bytes()));
//   ByteReader r(blob);  std::uint32_t v;  if (!r.U32(v)) { /* truncated */ }
//
// Readers never trust a length beyond the bytes they were given: every read reports failure
// instead of reading past the end or allocating a claimed size that is not there. Plain values:
// one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/math/buffer.h"

namespace dtrain::codec {

class ByteWriter {
 public:
  void U32(std::uint32_t v);
  void U64(std::uint64_t v);
  void F32(float v);
  void Raw(std::string_view bytes) { out_.append(bytes); }
  void String(std::string_view s);              // u64 length, then the bytes
  void Floats(std::span<const float> values);   // u64 count, then count little-endian floats
  void Reserve(std::size_t n) { out_.reserve(n); }

  const std::string& bytes() const { return out_; }
  std::string Take() && { return std::move(out_); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}
  std::size_t remaining() const { return bytes_.size() - pos_; }
  std::size_t position() const { return pos_; }

  // Each returns false, consuming nothing, when too few bytes are left.
  bool U32(std::uint32_t& v);
  bool U64(std::uint64_t& v);
  bool F32(float& v);
  bool Raw(std::size_t n, std::string_view& out);
  bool String(std::string& out);
  bool Floats(math::FloatBuffer& out);  // also false when the count claims more than is left

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
};

// A little-endian integer of `width` bytes (1..8) written to or read from a fixed place, for
// headers built in place (shared-memory messages, authentication transcripts).
inline void StoreLittle(std::uint8_t* out, std::uint64_t v, int width) {
  for (int i = 0; i < width; ++i) out[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
inline std::uint64_t LoadLittle(const std::uint8_t* in, int width) {
  std::uint64_t v = 0;
  for (int i = 0; i < width; ++i) v |= std::uint64_t{in[i]} << (8 * i);
  return v;
}

// CRC-32 (the zlib/gzip polynomial), computed by Intel's ISA-L with carry-less multiplication
// (512-bit VPCLMULQDQ where the CPU has it, picked at run time): about 60 GB/s on the development
// VMs against libdeflate's 28, so checksumming a frame costs far less than moving it.
std::uint32_t Crc32(std::string_view bytes);
// The CRC-32 of (what `crc` was computed over) followed by `bytes`: Crc32Update(Crc32(a), b) ==
// Crc32(a + b), and Crc32Update(0, b) == Crc32(b).
std::uint32_t Crc32Update(std::uint32_t crc, std::string_view bytes);
// "0x1a2b3c4d"
std::string FormatCrc32(std::uint32_t crc);

}  // namespace dtrain::codec
