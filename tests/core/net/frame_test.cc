// The frame codec: exact byte layout, field round trips, refusal of bad headers before any
// allocation, payload checksums, and the fuzz entry's invariants.
#include "core/net/frame.h"

#include <array>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "allocation_probe.h"
#include "core/codec/bytes.h"

namespace dtrain::net {
namespace frame_test {

using Header = std::array<std::uint8_t, kHeaderSize>;

Header Encode(const FrameHeader& h) {
  Header bytes{};
  EncodeHeader(h, bytes);
  return bytes;
}

std::span<const std::uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// A header whose every field holds a distinct, byte-asymmetric value, so a swapped, truncated or
// byte-reversed field shows.
FrameHeader Distinct() {
  return {.type = MessageType::kFloats,
          .job = 0x0807060504030201,
          .sender = 0x44332211,
          .tag = 0x88776655,
          .length = 0x00000010,
          .crc = 0xDEADBEEF};
}

BOOST_AUTO_TEST_SUITE(net_frame)

BOOST_AUTO_TEST_CASE(header_bytes_match_the_written_layout) {
  const Header expected = {
      0x44, 0x54, 0x52, 0x4E,                          // magic "DTRN"
      0x01, 0x00,                                      // version 1
      0x10, 0x00,                                      // type 16 (floats)
      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,  // job
      0x11, 0x22, 0x33, 0x44,                          // sender
      0x55, 0x66, 0x77, 0x88,                          // tag
      0x10, 0x00, 0x00, 0x00,                          // length
      0xEF, 0xBE, 0xAD, 0xDE,                          // crc
  };
  const Header bytes = Encode(Distinct());
  BOOST_TEST(bytes == expected, boost::test_tools::per_element());
  BOOST_TEST(std::memcmp(bytes.data(), "DTRN", 4) == 0);
}

BOOST_AUTO_TEST_CASE(every_field_round_trips) {
  FrameHeader decoded;
  BOOST_TEST(!DecodeHeader(Encode(Distinct()), kDefaultMaxPayload, decoded).has_value());
  BOOST_TEST((decoded == Distinct()));

  // Extremes of every field, one at a time, against a header that differs everywhere else.
  const FrameHeader base{
      .type = MessageType::kControl, .job = 1, .sender = 2, .tag = 3, .length = 4, .crc = 5};
  std::vector<FrameHeader> cases(6, base);
  cases[0].type = static_cast<MessageType>(0xFFFF);
  cases[1].job = ~std::uint64_t{0};
  cases[2].sender = kNoSender;
  cases[3].tag = 0xFFFFFFFF;
  cases[4].length = 0xFFFFFFFF;
  cases[5].crc = 0xFFFFFFFF;
  for (const FrameHeader& h : cases) {
    FrameHeader out;
    BOOST_TEST(!DecodeHeader(Encode(h), 0xFFFFFFFF, out).has_value());
    BOOST_TEST((out == h));
  }
}

BOOST_AUTO_TEST_CASE(unknown_types_pass_through) {
  FrameHeader h = Distinct();
  h.type = static_cast<MessageType>(77);
  FrameHeader out;
  BOOST_TEST(!DecodeHeader(Encode(h), kDefaultMaxPayload, out).has_value());
  BOOST_TEST(static_cast<unsigned>(out.type) == 77u);
  BOOST_TEST(MessageTypeName(out.type) == "?");
  BOOST_TEST(MessageTypeName(MessageType::kFloats) == "floats");
}

BOOST_AUTO_TEST_CASE(wrong_magic_is_refused) {
  Header bytes = Encode(Distinct());
  bytes[3] = 'X';
  FrameHeader out;
  out.tag = 1234;
  BOOST_TEST((DecodeHeader(bytes, kDefaultMaxPayload, out) == FrameError::kBadMagic));
  BOOST_TEST(out.tag == 1234u);  // untouched
}

BOOST_AUTO_TEST_CASE(wrong_version_reports_the_peers) {
  Header bytes = Encode(Distinct());
  bytes[4] = 0x02;
  bytes[5] = 0x01;  // version 0x0102
  FrameHeader out;
  out.tag = 1234;
  std::uint16_t peer_version = 0;
  BOOST_TEST((DecodeHeader(bytes, kDefaultMaxPayload, out, &peer_version) ==
              FrameError::kVersionMismatch));
  BOOST_TEST(peer_version == 0x0102);
  BOOST_TEST(out.tag == 1234u);
  // The version is checked before the length: a future peer's larger frames are not "too large".
  bytes[24] = bytes[25] = bytes[26] = bytes[27] = 0xFF;
  BOOST_TEST((DecodeHeader(bytes, 16, out) == FrameError::kVersionMismatch));
}

BOOST_AUTO_TEST_CASE(over_long_length_is_refused_without_allocating) {
  FrameHeader h = Distinct();
  h.length = 0xFFFFFFFF;
  const Header huge = Encode(h);
  h.length = 17;
  const Header small = Encode(h);
  FrameHeader out;
  testing::AllocationProbe probe;
  const auto huge_result = DecodeHeader(huge, kDefaultMaxPayload, out);
  const auto small_result = DecodeHeader(small, 16, out);
  const auto fits = DecodeHeader(small, 17, out);
  const std::size_t allocations = probe.count();
  BOOST_TEST((huge_result == FrameError::kTooLarge));
  BOOST_TEST((small_result == FrameError::kTooLarge));
  BOOST_TEST(!fits.has_value());
  BOOST_TEST(allocations == 0u);
  BOOST_TEST(out.length == 17u);
}

BOOST_AUTO_TEST_CASE(too_large_still_shows_what_was_claimed) {
  FrameHeader h = Distinct();
  h.length = 0xFFFFFFFF;
  FrameHeader out;
  BOOST_TEST((DecodeHeader(Encode(h), kDefaultMaxPayload, out) == FrameError::kTooLarge));
  BOOST_TEST(out.length == 0xFFFFFFFFu);
  BOOST_TEST((out.type == MessageType::kFloats));
}

BOOST_AUTO_TEST_CASE(payload_checksum_catches_a_flipped_bit_and_a_wrong_length) {
  const std::string payload = R"({"v":1,"op":"status","job":42})";
  FrameHeader h{.type = MessageType::kControl,
                .length = static_cast<std::uint32_t>(payload.size()),
                .crc = codec::Crc32(payload)};
  BOOST_TEST(PayloadMatches(h, Bytes(payload)));
  std::string flipped = payload;
  flipped[7] ^= 0x01;
  BOOST_TEST(!PayloadMatches(h, Bytes(flipped)));
  BOOST_TEST(!PayloadMatches(h, Bytes(payload).first(payload.size() - 1)));
}

BOOST_AUTO_TEST_CASE(unchecked_floats_match_any_payload_with_crc_zero_only) {
  const std::string payload = "\x01\x02\x03\x04\x05\x06\x07\x08";
  const std::string frame = EncodeFrame(MessageType::kUncheckedFloats, 0, 1, 2, payload);
  FrameHeader h;
  BOOST_TEST(!DecodeHeader(Bytes(frame).first<kHeaderSize>(), kDefaultMaxPayload, h).has_value());
  BOOST_TEST(h.crc == 0u);
  BOOST_TEST(PayloadMatches(h, Bytes(payload)));
  std::string flipped = payload;
  flipped[3] ^= 0x01;
  BOOST_TEST(PayloadMatches(h, Bytes(flipped)));  // no checksum: nothing to catch it
  BOOST_TEST(!PayloadMatches(h, Bytes(payload).first(7)));
  h.crc = codec::Crc32(payload);
  BOOST_TEST(!PayloadMatches(h, Bytes(payload)));  // a CRC where none may be
  BOOST_TEST(!HasChecksum(MessageType::kUncheckedFloats));
  BOOST_TEST(HasChecksum(MessageType::kFloats));
}

BOOST_AUTO_TEST_CASE(crc_over_parts_equals_crc_of_the_whole) {
  const std::string whole = "the quick brown fox jumps over the lazy dog, 0123456789";
  const std::uint32_t expected = codec::Crc32(whole);
  for (std::size_t a = 0; a <= whole.size(); ++a) {
    for (std::size_t b = a; b <= whole.size(); b += 7) {
      const std::span<const std::uint8_t> all = Bytes(whole);
      const std::span<const std::uint8_t> parts[] = {all.first(a), all.subspan(a, b - a),
                                                     all.subspan(b)};
      BOOST_TEST_REQUIRE(PayloadCrc(parts) == expected);
    }
  }
  BOOST_TEST(PayloadCrc({}) == codec::Crc32(""));
}

BOOST_AUTO_TEST_CASE(encode_frame_is_header_then_payload) {
  const std::string payload = R"({"v":1,"op":"list"})";
  const std::string frame = EncodeFrame(MessageType::kControl, 7, kNoSender, 9, payload);
  BOOST_TEST_REQUIRE(frame.size() == kHeaderSize + payload.size());
  const std::span<const std::uint8_t> bytes = Bytes(frame);
  FrameHeader h;
  BOOST_TEST(!DecodeHeader(bytes.first<kHeaderSize>(), kDefaultMaxPayload, h).has_value());
  BOOST_TEST((h.type == MessageType::kControl));
  BOOST_TEST(h.job == 7u);
  BOOST_TEST(h.sender == kNoSender);
  BOOST_TEST(h.tag == 9u);
  BOOST_TEST(h.length == payload.size());
  BOOST_TEST(frame.substr(kHeaderSize) == payload);
  BOOST_TEST(PayloadMatches(h, bytes.subspan(kHeaderSize)));
}

BOOST_AUTO_TEST_CASE(error_names_are_the_message_prefixes) {
  BOOST_TEST(FrameErrorName(FrameError::kBadMagic) == "bad magic");
  BOOST_TEST(FrameErrorName(FrameError::kVersionMismatch) == "version mismatch");
  BOOST_TEST(FrameErrorName(FrameError::kTooLarge) == "too large");
  BOOST_TEST(FrameErrorName(FrameError::kBadChecksum) == "bad checksum");
  BOOST_TEST(FrameErrorName(FrameError::kClosed) == "closed");
  BOOST_TEST(FrameErrorName(FrameError::kTimeout) == "timeout");
  BOOST_TEST(FrameErrorName(FrameError::kIo) == "io");
  BOOST_TEST(FrameErrorName(FrameError::kUnexpected) == "unexpected frame");
}

BOOST_AUTO_TEST_CASE(fuzz_entry_survives_valid_truncated_and_random_input) {
  const std::string frame = EncodeFrame(MessageType::kControl, 1, 2, 3, R"({"v":1})");
  const auto* data = reinterpret_cast<const std::uint8_t*>(frame.data());
  for (std::size_t n = 0; n <= frame.size(); ++n) BOOST_TEST(FuzzDecodeFrame(data, n) == 0);

  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::uint8_t> input(kHeaderSize + static_cast<std::size_t>(i % 64));
    for (std::uint8_t& b : input) b = static_cast<std::uint8_t>(byte(rng));
    if (i % 2 == 0) {  // valid magic and version, so the decoder gets past its first checks
      std::memcpy(input.data(), frame.data(), 6);
      input[24 + 1] = input[24 + 2] = input[24 + 3] = 0;  // length < 256
    }
    BOOST_TEST_REQUIRE(FuzzDecodeFrame(input.data(), input.size()) == 0);
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace frame_test
}  // namespace dtrain::net
