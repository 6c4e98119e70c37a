// RingBroadcast: every member of rings of 1 to 4 gets the root's blob, byte for byte, whichever
// member is the root and whatever the blob's size (empty, not a whole number of floats, several
// segments, bytes that are NaN patterns as floats), over each transport; a root that closes its
// links fails the others instead of hanging them.
#include "core/dist/ring_broadcast.h"

#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "ring_harness.h"

namespace dtrain::dist {
namespace ring_broadcast_test {

using namespace std::chrono_literals;
using testing::Transport;

constexpr std::uint32_t kTag = 11;

// `size` bytes that differ with `seed`, every byte value among them (NaN float patterns too).
std::string Blob(std::size_t size, int seed) {
  std::string blob(size, '\0');
  for (std::size_t i = 0; i < size; ++i) {
    blob[i] = static_cast<char>((i * 131 + static_cast<std::size_t>(seed) * 7 + i / 256) & 0xFF);
  }
  return blob;
}

BOOST_AUTO_TEST_SUITE(ring_broadcast)

BOOST_AUTO_TEST_CASE(every_member_gets_the_roots_blob) {
  for (const Transport transport : testing::kTransports) {
    for (int world = 1; world <= 4; ++world) {
      const std::vector<RingLinks> ring = testing::MakeRing(transport, world);
      for (int root = 0; root < world; ++root) {
        for (const std::size_t size : {std::size_t{0}, std::size_t{5}, std::size_t{600'003}}) {
          BOOST_TEST_CONTEXT(transport << " world " << world << " root " << root << " size "
                                       << size) {
            std::vector<std::string> got(static_cast<std::size_t>(world));
            const std::vector<Status> results = testing::RunRanks(world, [&](int r) -> Status {
              Result<std::string> blob =
                  RingBroadcast(r, world, ring[static_cast<std::size_t>(r)], root, Blob(size, r),
                                kTag, Clock::now() + 20s);
              if (!blob.ok()) return blob.status();
              got[static_cast<std::size_t>(r)] = std::move(blob).value();
              return Status::Ok();
            });
            for (int r = 0; r < world; ++r) {
              BOOST_TEST(results[static_cast<std::size_t>(r)].ok(),
                         results[static_cast<std::size_t>(r)].message());
              BOOST_TEST(got[static_cast<std::size_t>(r)] == Blob(size, root), "member " << r);
            }
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_root_that_closes_its_links_fails_the_others_promptly) {
  constexpr int kWorld = 3;
  const std::vector<RingLinks> ring = testing::MakeRing(Transport::kTcp, kWorld);
  const auto start = Clock::now();
  const std::vector<Status> results = testing::RunRanks(kWorld, [&](int r) -> Status {
    const RingLinks& links = ring[static_cast<std::size_t>(r)];
    if (r == 0) {
      for (const auto& link : links.owned) link->Close();
      return Status::Ok();
    }
    return RingBroadcast(r, kWorld, links, 0, {}, kTag, Clock::now() + 60s).status();
  });
  BOOST_TEST(!results[1].ok());
  BOOST_TEST(!results[2].ok());
  BOOST_TEST(testing::SecondsSince(start) < 30.0);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ring_broadcast_test
}  // namespace dtrain::dist
