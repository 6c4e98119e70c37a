#include "core/codec/bytes.h"

#include <isa-l/crc.h>

#include <bit>
#include <cstdio>
#include <cstring>

namespace dtrain::codec {
namespace {

std::uint64_t LoadLittle(const char* p, int width) {
  return codec::LoadLittle(reinterpret_cast<const std::uint8_t*>(p), width);
}

}  // namespace

void ByteWriter::U32(std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void ByteWriter::U64(std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void ByteWriter::F32(float v) { U32(std::bit_cast<std::uint32_t>(v)); }

void ByteWriter::String(std::string_view s) {
  U64(s.size());
  out_.append(s);
}

void ByteWriter::Floats(std::span<const float> values) {
  U64(values.size());
  if constexpr (std::endian::native == std::endian::little) {
    // The in-memory layout is the encoding: one copy for the whole vector.
    const std::size_t at = out_.size();
    out_.resize(at + values.size_bytes());
    if (!values.empty()) std::memcpy(out_.data() + at, values.data(), values.size_bytes());
  } else {
    for (float f : values) F32(f);
  }
}

bool ByteReader::U32(std::uint32_t& v) {
  if (remaining() < 4) return false;
  v = static_cast<std::uint32_t>(LoadLittle(bytes_.data() + pos_, 4));
  pos_ += 4;
  return true;
}

bool ByteReader::U64(std::uint64_t& v) {
  if (remaining() < 8) return false;
  v = LoadLittle(bytes_.data() + pos_, 8);
  pos_ += 8;
  return true;
}

bool ByteReader::F32(float& v) {
  std::uint32_t bits = 0;
  if (!U32(bits)) return false;
  v = std::bit_cast<float>(bits);
  return true;
}

bool ByteReader::Raw(std::size_t n, std::string_view& out) {
  if (remaining() < n) return false;
  out = bytes_.substr(pos_, n);
  pos_ += n;
  return true;
}

bool ByteReader::String(std::string& out) {
  const std::size_t start = pos_;
  std::uint64_t n = 0;
  std::string_view bytes;
  if (!U64(n) || n > remaining() || !Raw(static_cast<std::size_t>(n), bytes)) {
    pos_ = start;
    return false;
  }
  out.assign(bytes);
  return true;
}

bool ByteReader::Floats(math::FloatBuffer& out) {
  const std::size_t start = pos_;
  std::uint64_t n = 0;
  if (!U64(n) || n > remaining() / sizeof(float)) {
    pos_ = start;
    return false;
  }
  out.resize(static_cast<std::size_t>(n));
  const char* p = bytes_.data() + pos_;
  if constexpr (std::endian::native == std::endian::little) {
    if (n > 0) std::memcpy(out.data(), p, out.size() * sizeof(float));
  } else {
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = std::bit_cast<float>(static_cast<std::uint32_t>(LoadLittle(p + 4 * i, 4)));
    }
  }
  pos_ += out.size() * sizeof(float);
  return true;
}

std::uint32_t Crc32(std::string_view bytes) { return Crc32Update(0, bytes); }

std::uint32_t Crc32Update(std::uint32_t crc, std::string_view bytes) {
  if (bytes.empty()) return crc;
  return crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

std::string FormatCrc32(std::uint32_t crc) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08x", crc);
  return text;
}

}  // namespace dtrain::codec
