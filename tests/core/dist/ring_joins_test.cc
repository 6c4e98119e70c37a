// JoinRings (core/dist/peer_links.h): several rings joined at once over one listener per process,
// their connections told apart by the ring id in each introduction, as a two-level all-reduce
// joins a ring within its host and one across hosts. Every link must reach the neighbour its ring
// names, over TCP and over shared memory; a connection introduced for another ring fails the join.
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "core/dist/peer_links.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace ring_joins_test {

using namespace std::chrono_literals;

const std::string kToken(64, 't');

struct Listeners {
  explicit Listeners(int world) {
    for (int r = 0; r < world; ++r) {
      Result<PeerListener> l = PeerListener::Open("127.0.0.1");
      BOOST_TEST_REQUIRE(l.ok(), l.status().message());
      l.value().RequireToken(kToken);
      endpoints.push_back({"127.0.0.1", l.value().port()});
      mine.push_back(std::move(l).value());
    }
  }
  std::vector<PeerListener> mine;
  std::vector<Endpoint> endpoints;
};

// Sends this rank on each ring's right link, then reads its left neighbour's rank from its left.
Status CheckNeighbours(int rank, const std::vector<RingMembers>& rings,
                       const std::vector<RingLinks>& links) {
  const Deadline deadline = Clock::now() + 10s;
  for (const RingLinks& ring : links) {
    const float me = static_cast<float>(rank);
    if (Status s = ring.right->Send(1, {&me, 1}, deadline); !s.ok()) return s;
  }
  for (std::size_t k = 0; k < rings.size(); ++k) {
    const std::vector<int>& ranks = rings[k].ranks;
    const auto pos = std::find(ranks.begin(), ranks.end(), rank) - ranks.begin();
    const int left =
        ranks[static_cast<std::size_t>((pos + static_cast<std::ptrdiff_t>(ranks.size()) - 1) %
                                       static_cast<std::ptrdiff_t>(ranks.size()))];
    float got = -1.0f;
    Result<std::uint32_t> tag = links[k].left->RecvAnyTag({&got, 1}, deadline);
    if (!tag.ok()) return tag.status();
    if (got != static_cast<float>(left) ||
        !testing::Mentions(links[k].left->peer(), "rank " + std::to_string(left))) {
      return Status::Error("ring " + std::to_string(rings[k].id) + ": left is " +
                           links[k].left->peer() + ", which sent " + std::to_string(got) +
                           "; expected rank " + std::to_string(left));
    }
  }
  return Status::Ok();
}

BOOST_AUTO_TEST_SUITE(dist_ring_joins)

BOOST_AUTO_TEST_CASE(two_rings_per_process_over_one_listener_link_each_to_its_neighbours) {
  // 3 hosts x 2, placed round robin: rank 3k + g on host g. Rings within hosts {g, g+3} (id 1),
  // across hosts {3k, 3k+1, 3k+2} (id 2); odd ranks name them in the other order.
  for (LinkTransport transport : {LinkTransport::kTcp, LinkTransport::kAuto}) {
    BOOST_TEST_CONTEXT((transport == LinkTransport::kTcp ? "tcp" : "auto")) {
      Listeners listeners(6);
      const std::vector<Status> status = testing::RunRanks(6, [&](int rank) {
        std::vector<RingMembers> rings{
            {.id = 1, .ranks = {rank % 3, rank % 3 + 3}},
            {.id = 2, .ranks = {rank / 3 * 3, rank / 3 * 3 + 1, rank / 3 * 3 + 2}}};
        if (rank % 2 == 1) std::swap(rings[0], rings[1]);
        Result<std::vector<RingLinks>> links = JoinRings(
            rank, rings, listeners.endpoints, listeners.mine[static_cast<std::size_t>(rank)],
            Clock::now() + 20s, kToken, transport);
        if (!links.ok()) return links.status();
        return CheckNeighbours(rank, rings, links.value());
      });
      for (std::size_t r = 0; r < status.size(); ++r) {
        BOOST_TEST(status[r].ok(), "rank " << r << ": " << status[r].message());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_connection_introduced_for_another_ring_fails_the_join_naming_both) {
  Listeners listeners(2);
  // Rank 0 connects with the job's token, but as a member of ring 2 where rank 1 awaits ring 1.
  std::jthread stranger([&] {
    (void)ConnectLink(listeners.endpoints[1], static_cast<int>((2u << kRingIdShift) | 0u), 1, "",
                      Clock::now() + 5s, kToken, LinkTransport::kTcp);
  });
  Result<std::vector<RingLinks>> links =
      JoinRings(1, {{.id = 1, .ranks = {0, 1}}}, listeners.endpoints, listeners.mine[1],
                Clock::now() + 10s, kToken, LinkTransport::kTcp);
  BOOST_TEST_REQUIRE(!links.ok());
  BOOST_TEST_MESSAGE(links.status().message());
  BOOST_TEST(testing::Mentions(links.status().message(), "expected rank 0 to connect"));
  BOOST_TEST(testing::Mentions(links.status().message(),
                               "introduced itself as " + std::to_string(2u << kRingIdShift)));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ring_joins_test
}  // namespace dtrain::dist
