#include "daemon/store/checkpoint.h"

#include <zlib.h>

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <string>

#include "daemon/store/store_test_util.h"

namespace dtrain::store {
namespace checkpoint_test {

using testing::Contains;
using testing::SameBits;
using testing::SampleCheckpoint;

std::uint64_t ReadU64(const std::string& blob, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= std::uint64_t{static_cast<unsigned char>(blob[at + i])} << (8 * i);
  return v;
}

void WriteU64(std::string& blob, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) blob[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

void WriteU32(std::string& blob, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) blob[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

std::uint32_t Crc(std::string_view bytes) {
  return static_cast<std::uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

// Recomputes the trailer after a deliberate edit, as a crafted (not damaged) blob would have.
void Reseal(std::string& blob) {
  WriteU32(blob, blob.size() - 4, Crc({blob.data(), blob.size() - 4}));
}

// Offsets fixed by checkpoint_format.md.
constexpr std::size_t kSpecLengthAt = 8 + 4 + 32;
std::size_t VectorCountAt(const std::string& blob) {
  return kSpecLengthAt + 8 + ReadU64(blob, kSpecLengthAt) + 8;
}

BOOST_AUTO_TEST_SUITE(checkpoint_codec)

BOOST_AUTO_TEST_CASE(round_trip_is_bit_exact) {
  const CheckpointData original = SampleCheckpoint(12345, 1000);
  const std::string blob = EncodeCheckpoint(original);
  Result<CheckpointData> decoded = DecodeCheckpoint(blob);
  BOOST_REQUIRE_MESSAGE(decoded.ok(), decoded.status().message());
  BOOST_TEST(SameBits(original, decoded.value()));
  BOOST_TEST(EncodeCheckpoint(decoded.value()) == blob);
}

// A copy into a checkpoint that held another (larger) one is the viewed checkpoint exactly, and a
// copy of one of the same sizes keeps the buffers it had.
BOOST_AUTO_TEST_CASE(a_copy_reuses_the_buffers_it_is_made_in) {
  const CheckpointData first = SampleCheckpoint(300, 2000), second = SampleCheckpoint(12, 1000);
  CheckpointData copy = first;
  CopyCheckpoint(ViewOf(second), copy);
  BOOST_TEST(SameBits(second, copy));
  BOOST_TEST(EncodeCheckpoint(copy) == EncodeCheckpoint(second));
  const float* params = copy.params.data();
  CopyCheckpoint(ViewOf(SampleCheckpoint(13, 1000)), copy);
  BOOST_TEST(SameBits(SampleCheckpoint(13, 1000), copy));
  BOOST_TEST(copy.params.data() == params);
}

BOOST_AUTO_TEST_CASE(negative_step_and_empty_vectors_round_trip) {
  CheckpointData c;
  c.step = -7;
  c.seed = ~std::uint64_t{0};
  Result<CheckpointData> decoded = DecodeCheckpoint(EncodeCheckpoint(c));
  BOOST_REQUIRE_MESSAGE(decoded.ok(), decoded.status().message());
  BOOST_TEST(SameBits(c, decoded.value()));
}

BOOST_AUTO_TEST_CASE(layout_follows_the_documented_grammar) {
  CheckpointData c = SampleCheckpoint(0x0102030405060708, 3);
  c.epoch = 9;
  c.batch = 10;
  c.model_spec = "abc";
  c.optimizer_steps = 11;
  c.params = {1.0f, -2.0f, 0.5f};
  c.optimizer_state.resize(1);
  c.clocks = {{5, 6}};
  c.early_stopping = {0.5, 7, 2};
  const std::string blob = EncodeCheckpoint(c);
  BOOST_TEST(blob.size() == 68u + 3 + 2 * 8 + 6 * 4 + 8 + 2 * 8 + 3 * 8);
  BOOST_TEST(blob.substr(0, 8) == "DTRAINCK");
  BOOST_TEST(blob.substr(8, 4) == std::string("\x03\x00\x00\x00", 4));
  BOOST_TEST(blob.substr(12, 8) == std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
  BOOST_TEST(ReadU64(blob, 20) == 9u);
  BOOST_TEST(ReadU64(blob, 28) == 10u);
  BOOST_TEST(ReadU64(blob, kSpecLengthAt) == 3u);
  BOOST_TEST(blob.substr(kSpecLengthAt + 8, 3) == "abc");
  BOOST_TEST(ReadU64(blob, kSpecLengthAt + 11) == 11u);
  BOOST_TEST(blob.substr(VectorCountAt(blob), 4) == std::string("\x02\x00\x00\x00", 4));
  BOOST_TEST(ReadU64(blob, VectorCountAt(blob) + 4) == 3u);
  // -2.0f is 0xc0000000: little-endian bytes 00 00 00 c0.
  BOOST_TEST(blob.substr(VectorCountAt(blob) + 12 + 4, 4) == std::string("\x00\x00\x00\xc0", 4));
  // After the vectors (3 floats, then 3 of state): the version vectors' dimensions, then 5, 6.
  const std::size_t clocks_at = VectorCountAt(blob) + 4 + 2 * (8 + 12);
  BOOST_TEST(blob.substr(clocks_at, 8) == std::string("\x01\x00\x00\x00\x02\x00\x00\x00", 8));
  BOOST_TEST(ReadU64(blob, clocks_at + 8) == 5u);
  BOOST_TEST(ReadU64(blob, clocks_at + 16) == 6u);
  // Then the early-stopping state: best as binary64 (0.5 is 0x3fe0000000000000), its step, since.
  BOOST_TEST(ReadU64(blob, clocks_at + 24) == 0x3fe0000000000000u);
  BOOST_TEST(ReadU64(blob, clocks_at + 32) == 7u);
  BOOST_TEST(ReadU64(blob, clocks_at + 40) == 2u);
  const std::uint32_t crc = Crc({blob.data(), blob.size() - 4});
  BOOST_TEST(StoredChecksum(blob).value() == crc);
  BOOST_TEST(FormatChecksum(0x1a2b3c4d) == "0x1a2b3c4d");
}

BOOST_AUTO_TEST_CASE(every_flipped_byte_is_an_error_naming_the_damage) {
  const std::string blob = EncodeCheckpoint(SampleCheckpoint(3, 6));
  for (std::size_t i = 0; i < blob.size(); ++i) {
    std::string damaged = blob;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x10);
    Result<CheckpointData> decoded = DecodeCheckpoint(damaged);
    BOOST_REQUIRE_MESSAGE(!decoded.ok(), "flipping byte " << i << " went unnoticed");
    const std::string message = decoded.status().message();
    const std::string_view expected = i < 8    ? "bad magic"
                                      : i < 12 ? "version"
                                               : "checksum mismatch";
    BOOST_TEST(Contains(message, expected), "byte " << i << ": " << message);
  }
}

BOOST_AUTO_TEST_CASE(every_truncation_is_an_error) {
  const std::string blob = EncodeCheckpoint(SampleCheckpoint(3, 6));
  for (std::size_t size = 0; size < blob.size(); ++size) {
    Result<CheckpointData> decoded = DecodeCheckpoint(std::string_view(blob).substr(0, size));
    BOOST_REQUIRE_MESSAGE(!decoded.ok(), "a blob cut to " << size << " bytes was accepted");
    const std::string message = decoded.status().message();
    BOOST_TEST((Contains(message, "not a checkpoint") || Contains(message, "truncated")),
               size << ": " << message);
  }
}

BOOST_AUTO_TEST_CASE(wrong_magic_and_newer_versions_are_refused) {
  std::string blob = EncodeCheckpoint(SampleCheckpoint(1, 4));
  std::string other = blob;
  other.replace(0, 8, "SQLite f");
  BOOST_TEST(Contains(DecodeCheckpoint(other).status().message(), "bad magic"));
  WriteU32(blob, 8, 4);
  Reseal(blob);
  BOOST_TEST(DecodeCheckpoint(blob).status().message() ==
             "unsupported checkpoint format version 4 (this build reads versions 1 to 3)");
}

BOOST_AUTO_TEST_CASE(version_vectors_round_trip_and_version_1_and_2_blobs_still_load) {
  CheckpointData c = SampleCheckpoint(40, 8);
  c.clocks = {{10, 12, 9}, {11, 12, 9}};  // 2 shards, 3 workers
  c.early_stopping = {0.25, 30, 1};
  Result<CheckpointData> decoded = DecodeCheckpoint(EncodeCheckpoint(c));
  BOOST_REQUIRE_MESSAGE(decoded.ok(), decoded.status().message());
  BOOST_TEST(SameBits(c, decoded.value()));

  // A blob of version 2: no early-stopping state after the clocks; it loads with none.
  std::string v2 = EncodeCheckpoint(c);
  v2.erase(v2.size() - 4 - 24, 24);
  WriteU32(v2, 8, 2);
  Reseal(v2);
  c.early_stopping = {};
  Result<CheckpointData> second = DecodeCheckpoint(v2);
  BOOST_REQUIRE_MESSAGE(second.ok(), second.status().message());
  BOOST_TEST(SameBits(c, second.value()));

  // A blob of the first version: no dimensions after the last vector either.
  c.clocks.clear();
  std::string v1 = EncodeCheckpoint(c);
  v1.erase(v1.size() - 4 - 24 - 8, 24 + 8);
  WriteU32(v1, 8, 1);
  Reseal(v1);
  Result<CheckpointData> old = DecodeCheckpoint(v1);
  BOOST_REQUIRE_MESSAGE(old.ok(), old.status().message());
  BOOST_TEST(SameBits(c, old.value()));

  // Dimensions the blob cannot hold are refused before anything is allocated.
  std::string huge = EncodeCheckpoint(c);
  WriteU32(huge, huge.size() - 4 - 24 - 8, 0xffffffff);
  WriteU32(huge, huge.size() - 4 - 24 - 4, 0xffffffff);
  Reseal(huge);
  BOOST_TEST(Contains(DecodeCheckpoint(huge).status().message(),
                      "version vectors of 4294967295 x 4294967295 clocks exceed"));
}

BOOST_AUTO_TEST_CASE(lengths_beyond_the_blob_are_refused_even_under_a_valid_crc) {
  const std::string blob = EncodeCheckpoint(SampleCheckpoint(1, 4));
  const std::size_t count_at = VectorCountAt(blob);

  std::string spec = blob;
  WriteU64(spec, kSpecLengthAt, ~std::uint64_t{0});
  Reseal(spec);
  BOOST_TEST(Contains(DecodeCheckpoint(spec).status().message(), "model spec length"));

  std::string vectors = blob;
  WriteU32(vectors, count_at, 0xffffffff);
  Reseal(vectors);
  BOOST_TEST(Contains(DecodeCheckpoint(vectors).status().message(), "vector count 4294967295"));

  std::string none = blob;
  WriteU32(none, count_at, 0);
  Reseal(none);
  BOOST_TEST(Contains(DecodeCheckpoint(none).status().message(), "no parameter vector"));

  std::string floats = blob;
  WriteU64(floats, count_at + 4, std::uint64_t{1} << 62);  // * 4 bytes overflows 64 bits
  Reseal(floats);
  BOOST_TEST(Contains(DecodeCheckpoint(floats).status().message(), "vector 0 claims"));

  std::string extra = blob;
  extra.insert(extra.size() - 4, "xyz");
  Reseal(extra);
  BOOST_TEST(Contains(DecodeCheckpoint(extra).status().message(), "3 unexpected bytes"));

  std::string fewer = blob;
  WriteU32(fewer, count_at, 2);  // the third vector's bytes are then left over
  Reseal(fewer);
  BOOST_TEST(Contains(DecodeCheckpoint(fewer).status().message(), "unexpected bytes"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace checkpoint_test
}  // namespace dtrain::store
