// mode = "sync" over a ring: N replicas x batch b end bitwise identical to each other and equal
// (within float tolerance) to one replica x batch N*b on the same global batches.
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <cstring>

#include "core/dist/loopback_ring.h"
#include "core/dist/sync_strategy.h"
#include "core/math/gemm.h"
#include "replica_harness.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace sync_strategy_test {

using testing::Blobs;
using testing::GlobalBatchOptions;
using testing::MaxRelativeDifference;
using testing::TrainReplica;
using testing::TrainReplicasAsThreads;

const optim::OptimizerOptions kMomentum =
    testing::OptimizerOfType(optim::OptimizerType::kMomentum);
constexpr int kBatch = 16;

train::TrainOptions PerReplica(int rank, int world) {
  return GlobalBatchOptions(kBatch, rank, world);
}

std::unique_ptr<train::Strategy> MakeSync(RingAllReduce& ring, int, int, std::size_t n) {
  return std::make_unique<SyncAllReduceStrategy>(ring, optim::MakeOptimizer(kMomentum, 0, n), 1.0f);
}

// One replica with batch world * kBatch, the same global batches.
std::vector<float> Reference(const model::Model& model, const data::Dataset& set, int world) {
  train::LocalStrategy single(optim::MakeOptimizer(kMomentum, 0, model.NumParams()), 1.0f);
  Result<std::vector<float>> params =
      testing::TrainWithStrategy(model, set, GlobalBatchOptions(kBatch * world, 0, 1), single);
  BOOST_REQUIRE(params.ok());
  return std::move(params).value();
}

BOOST_AUTO_TEST_CASE(replicas_as_processes_over_tcp_match_one_replica) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(1000);
  const model::Model model(testing::SmallSpec());
  const int world = 3;
  const std::vector<float> reference = Reference(model, set, world);
  auto ring = LoopbackRing::Listen(world);
  BOOST_REQUIRE(ring.ok());
  // Each rank is a forked process; it reports its parameters through a pipe.
  const std::vector<testing::ForkedRank> ranks = testing::ForkRanks(world, [&](int r, int fd) {
    auto links = ring.value().Join(r, std::chrono::seconds(20));
    if (!links.ok()) return 2;
    auto params = TrainReplica(model, set, r, world, links.value(), PerReplica, MakeSync);
    if (!params.ok()) return 3;
    return dtrain::testing::WriteAll(fd, params.value().data(), params.value().size() * sizeof(float))
               ? 0
               : 4;
  });
  std::vector<std::vector<float>> finals;
  for (int r = 0; r < world; ++r) {
    const testing::ForkedRank& rank = ranks[static_cast<std::size_t>(r)];
    BOOST_TEST_CONTEXT("rank " << r) {
      BOOST_REQUIRE(WIFEXITED(rank.wait_status));
      BOOST_REQUIRE(WEXITSTATUS(rank.wait_status) == 0);
      BOOST_REQUIRE(rank.output.size() == reference.size() * sizeof(float));
    }
    std::vector<float> params(reference.size());
    std::memcpy(params.data(), rank.output.data(), rank.output.size());
    finals.push_back(std::move(params));
  }
  for (int r = 1; r < world; ++r) BOOST_TEST((finals[r] == finals[0]), "rank " << r);
  BOOST_TEST(MaxRelativeDifference(finals[0], reference) < 1e-5);
}

BOOST_AUTO_TEST_CASE(n_replicas_match_one_replica_with_n_times_the_batch) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(1000);
  const model::Model model(testing::SmallSpec());
  for (int world : {2, 3, 4}) {
    BOOST_TEST_CONTEXT("world " << world) {
      const std::vector<float> reference = Reference(model, set, world);
      auto finals = TrainReplicasAsThreads(model, set, world, PerReplica, MakeSync);
      for (int r = 0; r < world; ++r) BOOST_REQUIRE_MESSAGE(finals[r].ok(), finals[r].status().message());
      for (int r = 1; r < world; ++r) {
        BOOST_TEST((finals[r].value() == finals[0].value()), "rank " << r << " differs from rank 0");
      }
      const double worst = MaxRelativeDifference(finals[0].value(), reference);
      BOOST_TEST_MESSAGE("world " << world << ": max relative difference " << worst);
      BOOST_TEST(worst < 1e-5);
    }
  }
}

}  // namespace sync_strategy_test
}  // namespace dtrain::dist
