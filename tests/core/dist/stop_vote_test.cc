// Collective strategies agree on when to stop: one replica's stop request (a signal, a reached
// target) makes every replica stop after the same step, with the same reason — never a replica
// left waiting in an all-reduce for peers that quit. And the averaged optimizer state of
// mode = "local" with average_optimizer is the same on every replica right after an average.
// Checkpoint votes ride the same way, for replicas that checkpoint together.
#include <boost/test/unit_test.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/dist/local_sgd_strategy.h"
#include "core/dist/overlapped_sync_strategy.h"
#include "core/dist/sync_strategy.h"
#include "core/math/gemm.h"
#include "replica_harness.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace stop_vote_test {

// Asks to stop once the trainer has completed `stop_after` steps, on one replica only.
class StopAfter final : public train::TrainListener {
 public:
  explicit StopAfter(std::int64_t stop_after) : stop_after_(stop_after) {}
  void Record(std::span<const train::MetricPoint>) override {}
  bool AfterStep(const train::Trainer& trainer) override {
    return stop_after_ < 0 || trainer.position().step < stop_after_;
  }

 private:
  std::int64_t stop_after_;
};

struct Ended {
  Result<train::StopReason> why = Status::Error("not run");
  std::int64_t steps = 0;
  std::vector<float> params;
  std::vector<std::vector<float>> state;
};

using MakeStrategy = std::function<std::unique_ptr<train::Strategy>(RingAllReduce&, std::size_t)>;

std::vector<Ended> RunWorld(int world, int stopper, std::int64_t stop_after, double target_accuracy,
                            const MakeStrategy& make,
                            const train::EarlyStoppingOptions& early_stopping = {}) {
  math::SetBlasThreads(1);
  const data::Dataset set = testing::Blobs(960);
  const model::Model model(testing::SmallSpec());
  std::vector<RingLinks> links = MakeLocalRing(world);
  std::vector<Ended> ended(static_cast<std::size_t>(world));
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      RingAllReduce ring(r, world, links[r].left, links[r].right);
      std::unique_ptr<train::Strategy> strategy = make(ring, model.NumParams());
      train::TrainOptions o;
      o.epochs = 0;
      o.steps = 200;
      o.batch_size = 16;
      o.schedule.lr = 0.1f;
      o.rank = r;
      o.world_size = world;
      o.sharding = data::ShardMode::kGlobalBatches;
      o.eval_every = 5;
      o.target_accuracy = target_accuracy;
      o.early_stopping = early_stopping;
      // Only replica `stopper` evaluates, so only it can see the target reached.
      train::Trainer trainer(model, o, set, r == stopper ? &set : nullptr,
                             data::ConstantScaling(1.0f), *strategy);
      trainer.InitParams();
      StopAfter listener(r == stopper ? stop_after : -1);
      Ended& e = ended[static_cast<std::size_t>(r)];
      e.why = trainer.Run(listener);
      e.steps = trainer.position().step;
      e.params.assign(trainer.params().begin(), trainer.params().end());
      if (optim::Optimizer* opt = strategy->LocalOptimizer()) {
        for (std::span<float> v : opt->StateVectors()) e.state.emplace_back(v.begin(), v.end());
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  return ended;
}

std::unique_ptr<train::Strategy> Sync(RingAllReduce& ring, std::size_t n) {
  return std::make_unique<SyncAllReduceStrategy>(ring, optim::MakeOptimizer({}, 0, n), 0.0f);
}

BOOST_AUTO_TEST_SUITE(dist_stop_vote)

BOOST_AUTO_TEST_CASE(one_replicas_stop_request_stops_every_sync_replica_after_the_same_step) {
  const std::vector<Ended> ended = RunWorld(3, /*stopper=*/1, /*stop_after=*/17, 0.0, Sync);
  for (const Ended& e : ended) {
    BOOST_REQUIRE_MESSAGE(e.why.ok(), e.why.status().message());
    BOOST_TEST((e.why.value() == train::StopReason::kRequested));
    // Proposed after step 17, carried by step 18's all-reduce: all stop after step 18.
    BOOST_TEST(e.steps == 18);
    BOOST_TEST((e.params == ended[0].params));
  }
}

BOOST_AUTO_TEST_CASE(overlapped_sync_replicas_stop_after_the_same_step_too) {
  // The votes ride with the first bucket, cast when the step starts.
  const auto overlapped = [](RingAllReduce& ring, std::size_t n) {
    const model::Model model(testing::SmallSpec());
    return std::unique_ptr<train::Strategy>(std::make_unique<OverlappedSyncStrategy>(
        ring, PlanBuckets(LayerStarts(model), n, 1), optim::MakeOptimizer({}, 0, n), 0.0f));
  };
  const std::vector<Ended> ended = RunWorld(3, /*stopper=*/1, /*stop_after=*/17, 0.0, overlapped);
  for (const Ended& e : ended) {
    BOOST_REQUIRE_MESSAGE(e.why.ok(), e.why.status().message());
    BOOST_TEST((e.why.value() == train::StopReason::kRequested));
    BOOST_TEST(e.steps == 18);
    BOOST_TEST((e.params == ended[0].params));
  }
}

BOOST_AUTO_TEST_CASE(a_target_one_sync_replica_reached_stops_them_all) {
  const std::vector<Ended> ended = RunWorld(2, /*stopper=*/0, -1, /*target=*/0.5, Sync);
  for (const Ended& e : ended) {
    BOOST_REQUIRE_MESSAGE(e.why.ok(), e.why.status().message());
    BOOST_TEST((e.why.value() == train::StopReason::kTargetReached));
    BOOST_TEST(e.steps == ended[0].steps);
    BOOST_TEST(e.steps < 200);
  }
}

BOOST_AUTO_TEST_CASE(an_early_stop_one_sync_replica_judged_stops_them_all_after_the_same_step) {
  // min_delta beyond any change of the loss: the evaluation at step 5 stays the best, the one at
  // step 10 runs out the patience of 1, and step 11's all-reduce carries the vote.
  const std::vector<Ended> ended =
      RunWorld(3, /*stopper=*/2, -1, 0.0, Sync, {train::EarlyStoppingMetric::kEvalLoss, 1, 100.0});
  for (const Ended& e : ended) {
    BOOST_REQUIRE_MESSAGE(e.why.ok(), e.why.status().message());
    BOOST_TEST((e.why.value() == train::StopReason::kEarlyStopped));
    BOOST_TEST(e.steps == 11);
    BOOST_TEST((e.params == ended[0].params));
  }
}

BOOST_AUTO_TEST_CASE(local_replicas_stop_together_right_after_an_average) {
  auto local = [](RingAllReduce& ring, std::size_t n) {
    optim::OptimizerOptions adam;
    adam.type = optim::OptimizerType::kAdam;
    return std::unique_ptr<train::Strategy>(std::make_unique<LocalSgdStrategy>(
        ring, optim::MakeOptimizer(adam, 0, n), 0.0f, /*average_every=*/4,
        /*average_optimizer=*/true));
  };
  const std::vector<Ended> ended = RunWorld(3, /*stopper=*/2, /*stop_after=*/9, 0.0, local);
  for (const Ended& e : ended) {
    BOOST_REQUIRE_MESSAGE(e.why.ok(), e.why.status().message());
    BOOST_TEST((e.why.value() == train::StopReason::kRequested));
    BOOST_TEST(e.steps == 12);  // the first average after the request
    BOOST_TEST((e.params == ended[0].params));
    BOOST_TEST((e.state == ended[0].state));  // Adam's moments averaged too
    BOOST_TEST(e.state.size() == 2u);
  }
}

BOOST_AUTO_TEST_CASE(sync_strategy_reports_its_traffic) {
  const std::vector<Ended> ended = RunWorld(2, 0, /*stop_after=*/4, 0.0, Sync);
  BOOST_REQUIRE(ended[0].why.ok());
  // Stats live in the strategy; rerun one pair to read them.
  std::vector<RingLinks> links = MakeLocalRing(2);
  std::vector<float> a(1000, 1.0f), b(1000, 3.0f);
  std::vector<train::CommStats> stats(2);
  std::thread other([&] {
    RingAllReduce ring(1, 2, links[1].left, links[1].right);
    VotingAllReduce exchange(ring);
    std::span<float> p = exchange.Payload(b.size());
    std::copy(b.begin(), b.end(), p.begin());
    BOOST_CHECK(exchange.Mean(7).ok());
    stats[1] = exchange.stats();
  });
  RingAllReduce ring(0, 2, links[0].left, links[0].right);
  VotingAllReduce exchange(ring);
  std::span<float> p = exchange.Payload(a.size());
  std::copy(a.begin(), a.end(), p.begin());
  BOOST_REQUIRE(exchange.Mean(7).ok());
  other.join();
  BOOST_TEST(p[0] == 2.0f);
  BOOST_TEST(p[999] == 2.0f);
  BOOST_TEST(!exchange.agreed().has_value());
  // Two ranks: each sends the payload and its votes once (a direct exchange).
  const std::size_t floats = 1000 + VotingAllReduce::kVoteFloats;
  BOOST_TEST(exchange.stats().bytes_sent == floats * sizeof(float));
  BOOST_TEST(stats[1].bytes_received == floats * sizeof(float));
  BOOST_TEST(exchange.stats().comm_seconds > 0.0);
}

BOOST_AUTO_TEST_CASE(a_checkpoint_vote_and_stop_votes_ride_with_means_and_gathers) {
  // Rank 1 proposes a checkpoint before op 1 and a stop before op 2 (a gather); op 3 carries no
  // votes and changes no agreement; op 4 votes nothing.
  std::vector<RingLinks> links = MakeLocalRing(3);
  std::vector<std::vector<std::string>> seen(3);
  const std::vector<Status> status = testing::RunRanks(3, [&](int r) -> Status {
    RingAllReduce ring(r, 3, links[static_cast<std::size_t>(r)].left,
                       links[static_cast<std::size_t>(r)].right);
    VotingAllReduce exchange(ring);
    auto& mine = seen[static_cast<std::size_t>(r)];
    const auto note = [&] {
      mine.push_back(std::string(exchange.checkpoint_agreed() ? "checkpoint" : "-") + "/" +
                     (exchange.agreed() ? "stop" : "-"));
    };
    if (r == 1) exchange.ProposeCheckpoint();
    std::span<float> p = exchange.Payload(10);
    std::fill(p.begin(), p.end(), static_cast<float>(r));
    if (Status s = exchange.Mean(1); !s.ok()) return s;
    note();
    if (r == 1) exchange.Propose(train::StopReason::kRequested);
    std::vector<float> blocks(3 * 4, 0.0f);
    std::fill_n(blocks.begin() + 4 * r, 4, static_cast<float>(r + 1));
    if (Status s = exchange.Gather(blocks, 2); !s.ok()) return s;
    if (blocks != std::vector<float>{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}) {
      return Status::Error("rank " + std::to_string(r) + " gathered other blocks");
    }
    note();
    std::vector<float> plain(5, static_cast<float>(r));
    if (Status s = exchange.MeanWithoutVotes(plain, 3); !s.ok()) return s;
    note();
    if (Status s = exchange.Mean(4); !s.ok()) return s;
    note();
    return Status::Ok();
  });
  for (const Status& s : status) BOOST_TEST_REQUIRE(s.ok(), s.message());
  const std::vector<std::string> want = {"checkpoint/-", "-/stop", "-/stop", "-/-"};
  for (const auto& mine : seen) BOOST_TEST((mine == want));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace stop_vote_test
}  // namespace dtrain::dist
