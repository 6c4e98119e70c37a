// Where a job's processes go: PlaceJob's rules for hosts, pack and spread, and when a job waits
// or fails instead.
#include "daemon/server/placement.h"

#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

namespace dtrain::server {
namespace placement_test {

using Nodes = std::vector<std::string>;

config::ClusterConfig Cluster(int workers, config::ClusterMode mode, int servers = 1) {
  config::ClusterConfig c;
  c.workers = workers;
  c.mode = mode;
  c.servers = servers;
  return c;
}

const std::vector<NodeCapacity> kThree = {
    {"h0", "", 2, true}, {"h1", "10.0.0.2:7070", 2, true}, {"h2", "10.0.0.3:7070", 4, true}};

BOOST_AUTO_TEST_SUITE(placement)

BOOST_AUTO_TEST_CASE(pack_fills_this_host_then_the_peers_and_oversubscribes_a_lone_host) {
  const Placed p = PlaceJob(Cluster(5, config::ClusterMode::kAsync), 1, kThree);
  BOOST_REQUIRE(p.ok());
  BOOST_TEST((p.nodes == Nodes{"h0", "h0", "h1", "h1", "h2", "h0"}));  // the shard beside rank 0
  const Placed alone = PlaceJob(Cluster(4, config::ClusterMode::kSync), 1, {kThree.front()});
  BOOST_TEST((alone.nodes == Nodes{"h0", "h0", "h0", "h0"}));
  const Placed too_big = PlaceJob(Cluster(5, config::ClusterMode::kSync), 2, kThree);
  BOOST_TEST(too_big.wait == "waiting for cores: needs 10, the nodes that are up have 8");
}

BOOST_AUTO_TEST_CASE(partitions_are_placed_as_training_processes_and_pack_keeps_a_replica_together) {
  // 2 replicas x 2 partitions (ranks 0,1 = replica 0; 2,3 = replica 1), then 2 x 1 shards.
  config::ClusterConfig c = Cluster(2, config::ClusterMode::kAsync);
  c.model_parallel = 2;
  const Placed packed = PlaceJob(c, 1, kThree);
  BOOST_REQUIRE(packed.ok());
  BOOST_TEST((packed.nodes == Nodes{"h0", "h0", "h1", "h1", "h0", "h0"}));
  c.placement = config::PlacementPolicy::kSpread;
  const Placed spread = PlaceJob(c, 1, kThree);
  BOOST_TEST((spread.nodes == Nodes{"h0", "h1", "h2", "h0", "h1", "h2"}));
  c.placement = config::PlacementPolicy::kPack;
  const Placed two_threads = PlaceJob(c, 2, kThree);  // 4 x 2 cores: just what the nodes have
  BOOST_REQUIRE(two_threads.ok());
  BOOST_TEST((two_threads.nodes == Nodes{"h0", "h1", "h2", "h2", "h0", "h0"}));
  c.workers = 3;
  BOOST_TEST(PlaceJob(c, 2, kThree).wait ==
             "waiting for cores: needs 12, the nodes that are up have 8");
}

BOOST_AUTO_TEST_CASE(spread_goes_round_robin_over_the_nodes_that_are_up) {
  std::vector<NodeCapacity> nodes = kThree;
  nodes[1].up = false;
  config::ClusterConfig c = Cluster(3, config::ClusterMode::kAsync, 2);
  c.placement = config::PlacementPolicy::kSpread;
  const Placed p = PlaceJob(c, 1, nodes);
  BOOST_REQUIRE(p.ok());
  BOOST_TEST((p.nodes == Nodes{"h0", "h2", "h0", "h2", "h0"}));
}

BOOST_AUTO_TEST_CASE(hosts_are_followed_and_waited_for_and_unknown_ones_fail) {
  config::ClusterConfig c = Cluster(3, config::ClusterMode::kSync);
  c.hosts = {"h2", "h1"};
  const Placed p = PlaceJob(c, 1, kThree);
  BOOST_REQUIRE(p.ok());
  BOOST_TEST((p.nodes == Nodes{"h2", "h1", "h2"}));

  std::vector<NodeCapacity> down = kThree;
  down[2].up = false;
  BOOST_TEST(PlaceJob(c, 1, down).wait == "waiting for host h2 (down)");
  BOOST_TEST(PlaceJob(c, 3, kThree).wait == "waiting for cores: needs 3 on h1, which has 2");

  c.hosts = {"h0", "h9"};
  BOOST_TEST(PlaceJob(c, 1, kThree).error ==
             "cluster.hosts names h9, which is not a node of this cluster (h0, h1, h2)");
  std::vector<NodeCapacity> unheard = kThree;
  unheard[2] = {"10.0.0.3:7070", "10.0.0.3:7070", 0, false, false};
  BOOST_TEST(PlaceJob(c, 1, unheard).wait ==
             "waiting for host h9: not every peer has answered yet");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace placement_test
}  // namespace dtrain::server
