// The byte codec: little-endian layout, bounds-checked reads, and CRC-32.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>

#include "core/codec/bytes.h"

namespace dtrain::codec {
namespace bytes_test {

BOOST_AUTO_TEST_SUITE(codec)

BOOST_AUTO_TEST_CASE(crc32_is_the_standard_one_and_chains_over_parts) {
  BOOST_TEST(Crc32("123456789") == 0xCBF43926u);  // the CRC-32 check value
  BOOST_TEST(Crc32("") == 0u);
  const std::string text = "the quick brown fox jumps over the lazy dog, twice over";
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    const std::string_view view(text);
    std::uint32_t chained = Crc32Update(0, view.substr(0, cut));
    chained = Crc32Update(chained, {});  // an empty part changes nothing
    chained = Crc32Update(chained, view.substr(cut));
    BOOST_TEST(chained == Crc32(text));
  }
  BOOST_TEST(FormatCrc32(0xCBF43926u) == "0xcbf43926");
}

// Bit by bit, straight from the polynomial: the reference the vectorised CRC must equal.
std::uint32_t BitwiseCrc32(std::string_view bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : bytes) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

BOOST_AUTO_TEST_CASE(crc32_of_long_and_unaligned_buffers_matches_the_bitwise_definition) {
  // The wide (carry-less multiply) paths only engage past a few hundred bytes; frames are MiBs.
  std::string bytes((1u << 20) + 64, '\0');
  std::uint32_t state = 12345;
  for (char& c : bytes) {
    state = state * 1103515245u + 12345u;
    c = static_cast<char>(state >> 24);
  }
  for (std::size_t size : {1u, 15u, 64u, 255u, 256u, 257u, 4097u, (1u << 20) + 13}) {
    for (std::size_t offset : {0u, 1u, 3u}) {
      const std::string_view part = std::string_view(bytes).substr(offset, size);
      BOOST_TEST(Crc32(part) == BitwiseCrc32(part), "size " << size << " offset " << offset);
    }
  }
}

BOOST_AUTO_TEST_CASE(writer_and_reader_agree_and_refuse_what_is_not_there) {
  ByteWriter w;
  w.U32(0x01020304u);
  w.U64(0x1122334455667788ull);
  w.F32(-0.0f);
  w.String("spec");
  const float floats[] = {1.5f, std::numeric_limits<float>::infinity()};
  w.Floats(floats);
  const std::string& bytes = w.bytes();
  BOOST_TEST(static_cast<unsigned char>(bytes[0]) == 0x04u);  // little-endian
  ByteReader r(bytes);
  std::uint32_t u32 = 0;
  std::uint64_t u64 = 0;
  float f = 1.0f;
  std::string s;
  math::FloatBuffer v;
  BOOST_TEST(r.U32(u32));
  BOOST_TEST(r.U64(u64));
  BOOST_TEST(r.F32(f));
  BOOST_TEST(r.String(s));
  BOOST_TEST(r.Floats(v));
  BOOST_TEST(u32 == 0x01020304u);
  BOOST_TEST(u64 == 0x1122334455667788ull);
  BOOST_TEST(std::signbit(f));
  BOOST_TEST(s == "spec");
  BOOST_REQUIRE(v.size() == 2u);
  BOOST_TEST(std::isinf(v[1]));
  BOOST_TEST(r.remaining() == 0u);
  BOOST_TEST(!r.U32(u32));

  // A length that claims more than the bytes hold is refused and consumes nothing.
  ByteWriter lie;
  lie.U64(1ull << 40);
  ByteReader liar(lie.bytes());
  BOOST_TEST(!liar.Floats(v));
  BOOST_TEST(!liar.String(s));
  BOOST_TEST(liar.position() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace bytes_test
}  // namespace dtrain::codec
