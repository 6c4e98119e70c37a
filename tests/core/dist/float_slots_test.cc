// Integers in float slots (core/dist/float_slots.h): u64s low word first, round-tripping every bit
// pattern, and both data-plane protocols refusing a header without their magic in the same words.
#include "core/dist/float_slots.h"

#include <array>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <limits>

#include "core/dist/ps_messages.h"
#include "core/dist/sandblaster_messages.h"

namespace dtrain::dist {
namespace float_slots_test {

BOOST_AUTO_TEST_SUITE(float_slots)

BOOST_AUTO_TEST_CASE(u64s_and_doubles_round_trip_low_word_first) {
  std::array<float, 6> slots{};
  PutU64(slots, 0, 0x0123456789ABCDEFull);
  PutU64(slots, 2, std::numeric_limits<std::uint64_t>::max());  // NaN patterns, moved only
  PutF64(slots, 4, -0.1);
  BOOST_TEST(GetU32(slots, 0) == 0x89ABCDEFu);
  BOOST_TEST(GetU32(slots, 1) == 0x01234567u);
  BOOST_TEST(GetU64(slots, 0) == 0x0123456789ABCDEFull);
  BOOST_TEST(GetU64(slots, 2) == std::numeric_limits<std::uint64_t>::max());
  BOOST_TEST(GetF64(slots, 4) == -0.1);
}

BOOST_AUTO_TEST_CASE(a_header_without_its_protocols_magic_is_refused_saying_what_it_held) {
  std::array<float, 4> slots{};
  PutU32(slots, 1, 0x31765350u);
  BOOST_TEST(CheckMagic(slots, 1, 0x31765350u, "parameter-server").ok());
  const Status wrong = CheckMagic(slots, 0, 0x31765350u, "parameter-server");
  BOOST_TEST_REQUIRE(!wrong.ok());
  BOOST_TEST(wrong.message() == "bad parameter-server header: magic 0x00000000, not 0x31765350");

  std::array<float, kPsHeaderFloats> ps{};
  ps[0] = 1.0f;  // 0x3f800000
  const Result<PsHeader> not_ps = DecodePsHeader(ps);
  BOOST_TEST_REQUIRE(!not_ps.ok());
  BOOST_TEST(not_ps.status().message().rfind("bad parameter-server header: magic 0x3f800000", 0) ==
             0u);
  std::array<float, kSbHeaderFloats> sb{};
  const Result<SbHeader> not_sb = DecodeSb(sb);
  BOOST_TEST_REQUIRE(!not_sb.ok());
  BOOST_TEST(not_sb.status().message().rfind("bad Sandblaster header: magic 0x00000000, not", 0) ==
             0u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace float_slots_test
}  // namespace dtrain::dist
