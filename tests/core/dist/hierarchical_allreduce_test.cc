// The two-level all-reduce (core/dist/hierarchical_allreduce.h) and the host grouping that plans
// it (core/dist/host_groups.h). Ranks are placed round robin, as the daemon places them: rank
// k*h + g runs on host g at local index k. Every rank must end with the same bits, equal to the
// sum a plain loop computes in the rings' order (host sums, then chunk i of them across hosts),
// scaled once; a dead rank must fail the others' op, naming it and the level.
#include "core/dist/hierarchical_allreduce.h"

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <vector>

#include "core/dist/host_groups.h"
#include "core/dist/shard_ranges.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace hierarchical_allreduce_test {

using namespace std::chrono_literals;
using testing::Transport;

const RingOptions kOptions{.timeout = 60s, .segment_floats = 1000};

// The sum of `inputs` as a ring of inputs.size() ranks computes it: chunk c (ShardRangeOf) in the
// order c, c+1, ..., c-1.
std::vector<float> RingOrderSum(const std::vector<std::vector<float>>& inputs) {
  const int world = static_cast<int>(inputs.size());
  const std::size_t size = inputs.front().size();
  std::vector<float> sum(size);
  for (int c = 0; c < world; ++c) {
    const ShardRange chunk = ShardRangeOf(size, world, c);
    for (std::size_t f = chunk.begin; f < chunk.end; ++f) {
      float s = inputs[static_cast<std::size_t>(c)][f];
      for (int k = 1; k < world; ++k) s += inputs[static_cast<std::size_t>((c + k) % world)][f];
      sum[f] = s;
    }
  }
  return sum;
}

// h hosts of r ranks: a ring within each host, a ring across hosts at each local index.
struct TwoLevel {
  TwoLevel(Transport transport, int h, int r) : hosts(h), per_host(r) {
    for (int g = 0; g < h; ++g) local.emplace_back(testing::MakeRing(transport, r), kOptions);
    for (int i = 0; i < r; ++i) cross.emplace_back(testing::MakeRing(transport, h), kOptions);
  }
  int world() const { return hosts * per_host; }
  int Host(int rank) const { return rank % hosts; }
  int Index(int rank) const { return rank / hosts; }
  RingAllReduce& Local(int rank) {
    return *local[static_cast<std::size_t>(Host(rank))]
                .ranks[static_cast<std::size_t>(Index(rank))];
  }
  RingAllReduce& Cross(int rank) {
    return *cross[static_cast<std::size_t>(Index(rank))]
                .ranks[static_cast<std::size_t>(Host(rank))];
  }
  const RingLinks& LocalLinks(int rank) const {
    return local[static_cast<std::size_t>(Host(rank))].links[static_cast<std::size_t>(Index(rank))];
  }
  const RingLinks& CrossLinks(int rank) const {
    return cross[static_cast<std::size_t>(Index(rank))].links[static_cast<std::size_t>(Host(rank))];
  }
  // The mean as the two levels compute it, in a plain loop.
  std::vector<float> Expected(std::size_t size, std::uint32_t op) const {
    std::vector<std::vector<float>> host_sums;
    for (int g = 0; g < hosts; ++g) {
      std::vector<std::vector<float>> inputs;
      for (int i = 0; i < per_host; ++i) inputs.push_back(testing::Input(i * hosts + g, size, op));
      host_sums.push_back(RingOrderSum(inputs));
    }
    std::vector<float> mean(size);
    for (int i = 0; i < per_host; ++i) {
      const ShardRange chunk = ShardRangeOf(size, per_host, i);
      std::vector<std::vector<float>> parts;
      for (const std::vector<float>& sum : host_sums) {
        parts.emplace_back(sum.begin() + static_cast<std::ptrdiff_t>(chunk.begin),
                           sum.begin() + static_cast<std::ptrdiff_t>(chunk.end));
      }
      if (chunk.size() == 0) continue;
      const std::vector<float> across = RingOrderSum(parts);
      for (std::size_t f = 0; f < chunk.size(); ++f) {
        mean[chunk.begin + f] = across[f] * (1.0f / static_cast<float>(world()));
      }
    }
    return mean;
  }

  int hosts;
  int per_host;
  std::vector<testing::Ring> local;  // by host
  std::vector<testing::Ring> cross;  // by local index
};

std::vector<std::uint64_t> RoundRobinKeys(int hosts, int ranks) {
  std::vector<std::uint64_t> keys;
  for (int r = 0; r < ranks; ++r) keys.push_back(1000 + static_cast<std::uint64_t>(r % hosts));
  return keys;
}

BOOST_AUTO_TEST_SUITE(dist_host_groups)

BOOST_AUTO_TEST_CASE(round_robin_ranks_group_by_host_and_cross_by_local_index) {
  const std::optional<HostGroups> groups = HostGroups::Plan(RoundRobinKeys(3, 6));
  BOOST_TEST_REQUIRE(groups.has_value());
  BOOST_TEST(groups->hosts() == 3);
  BOOST_TEST(groups->per_host() == 2);
  BOOST_TEST(groups->LocalRing(4) == (std::vector<int>{1, 4}), boost::test_tools::per_element());
  BOOST_TEST(groups->LocalIndex(4) == 1);
  BOOST_TEST(groups->LocalIndex(1) == 0);
  BOOST_TEST(groups->Host(4) == 1);
  BOOST_TEST(groups->CrossRing(4) == (std::vector<int>{3, 4, 5}), boost::test_tools::per_element());
  BOOST_TEST(groups->CrossRing(2) == (std::vector<int>{0, 1, 2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(groups_go_by_their_smallest_rank_whatever_the_keys) {
  const std::vector<std::uint64_t> keys{9, 3, 3, 9};
  const std::optional<HostGroups> groups = HostGroups::Plan(keys);
  BOOST_TEST_REQUIRE(groups.has_value());
  BOOST_TEST(groups->LocalRing(3) == (std::vector<int>{0, 3}), boost::test_tools::per_element());
  BOOST_TEST(groups->CrossRing(3) == (std::vector<int>{3, 2}), boost::test_tools::per_element());
  BOOST_TEST(groups->Host(2) == 1);
  BOOST_TEST(groups->CrossRing(1) == (std::vector<int>{0, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(no_plan_for_one_host_one_rank_per_host_or_uneven_hosts) {
  const std::vector<std::vector<std::uint64_t>> flat{{7, 7, 7, 7},    {1, 2, 3}, {1, 1, 2},
                                                     {1, 2, 1, 2, 1}, {5},       {}};
  for (const std::vector<std::uint64_t>& keys : flat) {
    BOOST_TEST(!HostGroups::Plan(keys).has_value());
  }
}

BOOST_AUTO_TEST_CASE(host_keys_are_equal_exactly_for_equal_identities) {
  const HostIdentity a{.boot_id = "b0", .net_ns = 11, .ipc_ns = 12};
  HostIdentity same = a;
  HostIdentity other_net = a;
  other_net.net_ns = 13;
  HostIdentity other_boot = a;
  other_boot.boot_id = "b1";
  BOOST_TEST(HostKey(a) == HostKey(same));
  BOOST_TEST(HostKey(a) != HostKey(other_net));
  BOOST_TEST(HostKey(a) != HostKey(other_boot));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(dist_hierarchical_allreduce)

BOOST_AUTO_TEST_CASE(every_rank_gets_the_two_level_mean_bit_for_bit) {
  for (const auto& [h, r] : {std::pair{2, 2}, std::pair{3, 2}, std::pair{2, 3}}) {
    for (std::size_t size : {std::size_t{1}, std::size_t{1001}, std::size_t{100'003}}) {
      BOOST_TEST_CONTEXT(h << " hosts x " << r << ", " << size << " floats") {
        TwoLevel rings(Transport::kLocal, h, r);
        std::vector<HierarchicalAllReduce> two_level;
        for (int rank = 0; rank < rings.world(); ++rank) {
          two_level.emplace_back(rings.Local(rank), rings.Cross(rank));
        }
        for (std::uint32_t op : {1u, 2u}) {  // consecutive ops on the same rings
          std::vector<std::vector<float>> data;
          for (int rank = 0; rank < rings.world(); ++rank) {
            data.push_back(testing::Input(rank, size, op));
          }
          const std::vector<Status> status = testing::RunRanks(rings.world(), [&](int rank) {
            return two_level[static_cast<std::size_t>(rank)].AllReduceMean(
                data[static_cast<std::size_t>(rank)], op);
          });
          const std::vector<float> expected = rings.Expected(size, op);
          for (int rank = 0; rank < rings.world(); ++rank) {
            BOOST_TEST_CONTEXT("rank " << rank << ", op " << op) {
              BOOST_TEST_REQUIRE(status[static_cast<std::size_t>(rank)].ok(),
                                 status[static_cast<std::size_t>(rank)].message());
              BOOST_TEST(testing::SameBits(data[static_cast<std::size_t>(rank)], expected));
            }
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(only_the_ring_across_hosts_counts_as_sent_over_the_network) {
  // Each rank sends its chunk (size / r floats) across 2 hosts: the direct exchange sends it all.
  constexpr std::size_t kSize = 4000;
  TwoLevel rings(Transport::kLocal, 2, 2);
  std::vector<HierarchicalAllReduce> two_level;
  for (int rank = 0; rank < 4; ++rank) two_level.emplace_back(rings.Local(rank), rings.Cross(rank));
  std::vector<std::vector<float>> data;
  for (int rank = 0; rank < 4; ++rank) data.push_back(testing::Input(rank, kSize));
  const std::vector<Status> status = testing::RunRanks(4, [&](int rank) {
    return two_level[static_cast<std::size_t>(rank)].AllReduceMean(
        data[static_cast<std::size_t>(rank)], 1);
  });
  for (int rank = 0; rank < 4; ++rank) {
    BOOST_TEST_REQUIRE(status[static_cast<std::size_t>(rank)].ok());
    const TwoLevelOpStats& cost = two_level[static_cast<std::size_t>(rank)].last_op();
    BOOST_TEST(cost.cross.bytes_sent == kSize / 2 * sizeof(float));
    BOOST_TEST(cost.local.bytes_sent > 0u);
  }
}

BOOST_AUTO_TEST_CASE(a_dead_rank_fails_its_host_and_its_cross_ring_naming_it) {
  // 2 hosts x 2: rank 1 (host 1, index 0) closes its links instead of reducing. Its host's other
  // rank (3) sees it as rank 0 of the ring within the host, the rank at index 0 on host 0 (rank 0)
  // as rank 1 of the ring across hosts. A rank whose op fails closes its links, as a process that
  // fails its step ends, so that no rank waits for the deadline.
  TwoLevel rings(Transport::kTcp, 2, 2);
  constexpr int kVictim = 1;
  auto close_all = [&](int rank) {
    for (const RingLinks* links : {&rings.LocalLinks(rank), &rings.CrossLinks(rank)}) {
      links->left->Close();
      links->right->Close();
    }
  };
  const Clock::time_point start = Clock::now();
  const std::vector<Status> status = testing::RunRanks(4, [&](int rank) {
    if (rank == kVictim) {
      close_all(rank);
      return Status::Ok();
    }
    HierarchicalAllReduce two_level(rings.Local(rank), rings.Cross(rank));
    std::vector<float> data = testing::Input(rank, 100'000);
    Status s = two_level.AllReduceMean(data, 5);
    if (!s.ok()) close_all(rank);
    return s;
  });
  BOOST_TEST(testing::SecondsSince(start) < 30.0);
  for (int rank : {0, 2, 3}) {
    BOOST_TEST_CONTEXT("rank " << rank) {
      BOOST_TEST_REQUIRE(!status[static_cast<std::size_t>(rank)].ok());
      BOOST_TEST_MESSAGE(status[static_cast<std::size_t>(rank)].message());
    }
  }
  const std::string& partner = status[3].message();
  BOOST_TEST(testing::Mentions(partner, "within the host"));
  BOOST_TEST(testing::Mentions(partner, "rank 0"));
  BOOST_TEST(testing::Mentions(partner, "op 10"));  // the first op within the host: 2 * 5
  const std::string& across = status[0].message();
  BOOST_TEST(testing::Mentions(across, "across hosts"));
  BOOST_TEST(testing::Mentions(across, "rank 1"));
  BOOST_TEST(testing::Mentions(across, "op 5"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace hierarchical_allreduce_test
}  // namespace dtrain::dist
