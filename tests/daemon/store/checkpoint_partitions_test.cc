// A model-parallel job's checkpoint: split into the partitions' parts and joined back, bit for
// bit, in the model's own layout; each part is its partition's range of the partition-major
// vector (so a tensor partition gets its columns), with its shards' clocks.
#include "daemon/store/checkpoint_partitions.h"

#include <boost/test/unit_test.hpp>

#include "core/model/partition_plan.h"
#include "daemon/store/store_test_util.h"

namespace dtrain::store {
namespace checkpoint_partitions_test {

using testing::Contains;
using testing::SameBits;
using testing::SampleCheckpoint;

constexpr std::size_t kParams = 4 * 8 + 8 + 8 * 3 + 3;  // SampleCheckpoint's model

config::ClusterConfig Cluster(model::PartitionKind kind, int parts, int shards) {
  config::ClusterConfig c;
  c.workers = 2;
  c.mode = shards > 0 ? config::ClusterMode::kAsync : config::ClusterMode::kSync;
  c.servers = shards > 0 ? shards : 1;
  c.model_parallel = parts;
  c.partition = kind;
  return c;
}

std::vector<CheckpointData> Decoded(const std::vector<std::string>& blobs) {
  std::vector<CheckpointData> parts;
  for (const std::string& blob : blobs) {
    Result<CheckpointData> part = DecodeCheckpoint(blob);
    BOOST_REQUIRE_MESSAGE(part.ok(), part.status().message());
    parts.push_back(std::move(part).value());
  }
  return parts;
}

BOOST_AUTO_TEST_CASE(split_then_join_gives_back_the_whole_checkpoint) {
  for (model::PartitionKind kind : {model::PartitionKind::kLayers, model::PartitionKind::kTensor}) {
    // The sample model has 2 layers (so "layers" splits 2 ways) of 8 and 3 units.
    for (int parts : {2, 3}) {
      if (kind == model::PartitionKind::kLayers && parts > 2) continue;
      const config::ClusterConfig cluster = Cluster(kind, parts, 2);
      CheckpointData whole = SampleCheckpoint(40, kParams);
      whole.clocks.assign(static_cast<std::size_t>(2 * parts), std::vector<std::uint64_t>{});
      for (std::size_t k = 0; k < whole.clocks.size(); ++k) whole.clocks[k] = {k, 10 + k};
      Result<std::vector<std::string>> blobs = SplitPartitionCheckpoint(cluster, whole);
      BOOST_REQUIRE_MESSAGE(blobs.ok(), blobs.status().message());
      std::vector<CheckpointData> decoded = Decoded(blobs.value());
      BOOST_REQUIRE_EQUAL(decoded.size(), static_cast<std::size_t>(parts));
      for (int p = 0; p < parts; ++p) {
        const auto clocks = decoded[static_cast<std::size_t>(p)].clocks;
        BOOST_REQUIRE_EQUAL(clocks.size(), 2u);
        BOOST_TEST(clocks[0][0] == static_cast<std::uint64_t>(2 * p));
        BOOST_TEST(decoded[static_cast<std::size_t>(p)].step == 40);
      }
      Result<CheckpointData> joined = JoinPartitionCheckpoints(cluster, std::move(decoded));
      BOOST_REQUIRE_MESSAGE(joined.ok(), joined.status().message());
      BOOST_TEST(SameBits(joined.value(), whole), "kind " << static_cast<int>(kind) << " K "
                                                          << parts);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_tensor_part_holds_its_columns_of_every_layer) {
  const config::ClusterConfig cluster = Cluster(model::PartitionKind::kTensor, 2, 0);
  const CheckpointData whole = SampleCheckpoint(7, kParams);
  Result<std::vector<std::string>> blobs = SplitPartitionCheckpoint(cluster, whole);
  BOOST_REQUIRE(blobs.ok());
  const std::vector<CheckpointData> parts = Decoded(blobs.value());
  // Partition 1's first entries are layer 0's W[0][4..8) (4 inputs x 8 units, split 4 + 4).
  for (std::size_t j = 0; j < 4; ++j) {
    BOOST_TEST(parts[1].params[j] == whole.params[4 + j]);
    BOOST_TEST(parts[1].optimizer_state[0][j] == whole.optimizer_state[0][4 + j]);
  }
  BOOST_TEST(parts[0].params.size() + parts[1].params.size() == kParams);
}

BOOST_AUTO_TEST_CASE(a_checkpoint_of_another_size_is_refused_with_both_sizes) {
  const config::ClusterConfig cluster = Cluster(model::PartitionKind::kTensor, 2, 0);
  const CheckpointData wrong = SampleCheckpoint(9, kParams - 1);
  Result<std::vector<std::string>> blobs = SplitPartitionCheckpoint(cluster, wrong);
  BOOST_REQUIRE(!blobs.ok());
  BOOST_TEST(Contains(blobs.status().message(), "step 9"));
  BOOST_TEST(Contains(blobs.status().message(), std::to_string(kParams)));
}

BOOST_AUTO_TEST_CASE(without_model_parallelism_the_checkpoint_passes_through) {
  config::ClusterConfig cluster;
  const CheckpointData whole = SampleCheckpoint(3, 11);  // no model needed: not looked at
  Result<std::vector<std::string>> blobs = SplitPartitionCheckpoint(cluster, whole);
  BOOST_REQUIRE(blobs.ok());
  BOOST_REQUIRE_EQUAL(blobs.value().size(), 1u);
  Result<CheckpointData> joined = JoinPartitionCheckpoints(cluster, Decoded(blobs.value()));
  BOOST_REQUIRE(joined.ok());
  BOOST_TEST(SameBits(joined.value(), whole));
}

}  // namespace checkpoint_partitions_test
}  // namespace dtrain::store
