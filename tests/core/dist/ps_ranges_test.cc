// Parameter-server layout and wire format: ShardRanges cover [0, n) exactly with sizes that differ
// by at most one (also with fewer floats than shards), and the protocol header carries every
// field bit for bit and refuses what is not a header.
#include <array>
#include <bit>
#include <boost/test/unit_test.hpp>
#include <limits>

#include "core/dist/parameter_shard.h"
#include "core/dist/shard_ranges.h"

namespace dtrain::dist {
namespace ps_ranges_test {

BOOST_AUTO_TEST_SUITE(ps_ranges)

BOOST_AUTO_TEST_CASE(shard_ranges_cover_the_vector_exactly) {
  std::vector<std::size_t> sizes;
  for (std::size_t n = 0; n <= 40; ++n) sizes.push_back(n);
  for (std::size_t n : {97u, 1000u, 1023u, 1024u, 1025u, 123457u}) sizes.push_back(n);
  for (std::size_t n : sizes) {
    for (int shards = 1; shards <= 9; ++shards) {
      BOOST_TEST_CONTEXT("n " << n << ", shards " << shards) {
        const std::vector<ShardRange> r = ShardRanges(n, shards);
        BOOST_TEST_REQUIRE(r.size() == static_cast<std::size_t>(shards));
        BOOST_TEST(r.front().begin == 0u);
        BOOST_TEST(r.back().end == n);
        std::size_t smallest = n, largest = 0, total = 0;
        for (std::size_t k = 0; k < r.size(); ++k) {
          BOOST_TEST(r[k].begin <= r[k].end);
          if (k > 0) BOOST_TEST(r[k].begin == r[k - 1].end, "shard " << k << " is not contiguous");
          // Larger ranges first, as ring all-reduce's chunks.
          if (k > 0) BOOST_TEST(r[k].size() <= r[k - 1].size());
          smallest = std::min(smallest, r[k].size());
          largest = std::max(largest, r[k].size());
          total += r[k].size();
        }
        BOOST_TEST(total == n);
        BOOST_TEST(largest - smallest <= 1u);
        if (n < static_cast<std::size_t>(shards)) BOOST_TEST(r.back().size() == 0u);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(no_shards_means_no_ranges) {
  BOOST_TEST(ShardRanges(10, 0).empty());
  BOOST_TEST(ShardRanges(10, -2).empty());
}

BOOST_AUTO_TEST_CASE(the_header_carries_every_field_bit_for_bit) {
  PsHeader h;
  h.from = 7;
  h.vote = 3;
  h.lr = 0.0123f;
  h.clock = 0x0123456789ABCDEFull;
  h.basis = std::numeric_limits<std::uint64_t>::max();
  h.rows = 0xFFFFFFFFu;        // a NaN bit pattern in its float slot: moved, never computed on
  h.total_rows = 0x7F800001u;  // a signalling NaN pattern
  h.num_params = 1ull << 40;
  h.begin = 5;
  h.end = (1ull << 33) + 1;
  h.steps = 99;
  h.shard = 2;
  h.shards = 3;
  h.workers = 4;
  h.mode = static_cast<std::uint32_t>(PsMode::kAsync);
  h.max_staleness = 6;
  h.state_vectors = 2;
  h.flags = kPsWantParams;
  std::array<float, kPsHeaderFloats> raw;
  EncodePsHeader(h, raw);
  BOOST_TEST(std::bit_cast<std::uint32_t>(raw[0]) == kPsMagic);
  std::array<float, kPsHeaderFloats> copy = raw;  // as a link moves it
  Result<PsHeader> back = DecodePsHeader(copy);
  BOOST_TEST_REQUIRE(back.ok());
  const PsHeader& b = back.value();
  BOOST_TEST(b.from == h.from);
  BOOST_TEST(b.vote == h.vote);
  BOOST_TEST(std::bit_cast<std::uint32_t>(b.lr) == std::bit_cast<std::uint32_t>(h.lr));
  BOOST_TEST(b.clock == h.clock);
  BOOST_TEST(b.basis == h.basis);
  BOOST_TEST(b.rows == h.rows);
  BOOST_TEST(b.total_rows == h.total_rows);
  BOOST_TEST(b.num_params == h.num_params);
  BOOST_TEST(b.begin == h.begin);
  BOOST_TEST(b.end == h.end);
  BOOST_TEST(b.steps == h.steps);
  BOOST_TEST(b.shard == h.shard);
  BOOST_TEST(b.shards == h.shards);
  BOOST_TEST(b.workers == h.workers);
  BOOST_TEST(b.mode == h.mode);
  BOOST_TEST(b.max_staleness == h.max_staleness);
  BOOST_TEST(b.state_vectors == h.state_vectors);
  BOOST_TEST(b.flags == h.flags);
  // u64 fields are low word first.
  BOOST_TEST(std::bit_cast<std::uint32_t>(raw[4]) == 0x89ABCDEFu);
  BOOST_TEST(std::bit_cast<std::uint32_t>(raw[5]) == 0x01234567u);
}

BOOST_AUTO_TEST_CASE(a_message_without_the_magic_is_not_a_header) {
  std::array<float, kPsHeaderFloats> raw{};
  raw[0] = 1.0f;
  Result<PsHeader> h = DecodePsHeader(raw);
  BOOST_TEST_REQUIRE(!h.ok());
  BOOST_TEST(h.status().message().find("magic") != std::string::npos, h.status().message());
}

BOOST_AUTO_TEST_CASE(tags_are_named_in_errors) {
  BOOST_TEST(PsTagName(PsRequestTag(PsMessage::kPush)) == "push");
  BOOST_TEST(PsTagName(PsReplyTag(PsMessage::kFetch)) == "fetch reply");
  BOOST_TEST(PsTagName(PsDataTag(PsReplyTag(PsMessage::kSnapshot))) == "snapshot reply data");
  BOOST_TEST(PsTagName(7) == "tag 0x00000007");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ps_ranges_test
}  // namespace dtrain::dist
