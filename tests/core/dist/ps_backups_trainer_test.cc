// Backup workers through the training loop: three Trainers over SyncPsStrategy and one shard that
// goes on with the first two gradients of a step. One replica is held back (its listener waits
// until the others are several steps ahead), so its push comes late and it skips steps; the rows
// its dropped and skipped parts held are owed to the next steps. Every epoch must still take every
// row exactly once, and the replicas end with the same parameters.
#include <boost/test/unit_test.hpp>
#include <condition_variable>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "core/dist/sync_ps_strategy.h"
#include "core/math/gemm.h"
#include "replica_harness.h"

namespace dtrain::dist {
namespace {

BOOST_AUTO_TEST_SUITE(ps_backups_trainer)

using testing::Blobs;
using testing::GlobalBatchOptions;

constexpr int kWorkers = 3;
constexpr int kBatch = 8;
constexpr std::uint64_t kSeed = 4;  // GlobalBatchOptions's

// What every replica saw, shared between their threads: the rows each (epoch, batch, rank) took
// (the last record wins: nothing is redone here) and each step's mask.
struct Seen {
  std::mutex mu;
  std::condition_variable moved;
  std::int64_t rank0_steps = 0;
  std::map<std::pair<std::uint64_t, std::size_t>, std::map<int, std::vector<std::uint32_t>>> rows;
  std::map<std::pair<std::uint64_t, std::size_t>, std::uint64_t> masks;
  bool masks_agree = true;
};

// Records the rows and masks; rank `held`, at step `hold_at`, waits until rank 0 has completed
// `release_at` steps, so the shard goes on without it.
class Recorder final : public train::TrainListener {
 public:
  Recorder(Seen& seen, int rank, int held, std::int64_t hold_at, std::int64_t release_at)
      : seen_(seen), rank_(rank), held_(held), hold_at_(hold_at), release_at_(release_at) {}
  void Record(std::span<const train::MetricPoint> points) override {
    for (const train::MetricPoint& p : points) {
      if (p.name == train::kDroppedGradients) dropped_ = p.value;
    }
  }
  void Taking(const train::Trainer& trainer) override {
    const train::Trainer::TakenBatch& b = trainer.last_batch();
    std::unique_lock lock(seen_.mu);
    if (rank_ == held_ && b.at.step == hold_at_) {
      seen_.moved.wait(lock, [&] { return seen_.rank0_steps >= release_at_; });
    }
    seen_.rows[{b.at.epoch, b.at.batch}][rank_].assign(b.rows.begin(), b.rows.end());
  }
  bool AfterStep(const train::Trainer& trainer) override {
    const train::Trainer::TakenBatch& b = trainer.last_batch();
    std::lock_guard lock(seen_.mu);
    for (std::size_t i = 0; i < b.masks.size(); ++i) {
      const auto [at, fresh] = seen_.masks.try_emplace({b.at.epoch, b.at.batch + i}, b.masks[i]);
      if (!fresh && at->second != b.masks[i]) seen_.masks_agree = false;
    }
    if (rank_ == 0) seen_.rank0_steps = trainer.position().step;
    seen_.moved.notify_all();
    return true;
  }
  double dropped() const { return dropped_; }

 private:
  Seen& seen_;
  int rank_, held_;
  std::int64_t hold_at_, release_at_;
  double dropped_ = 0.0;
};

BOOST_AUTO_TEST_CASE(a_held_back_replica_is_left_out_and_every_row_is_still_taken_once) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(480);  // 20 steps of 24 rows an epoch
  const model::Model model(testing::SmallSpec());
  const std::size_t n = model.NumParams();
  std::vector<float> initial(n);
  model.Init(initial, kSeed);
  std::vector<std::unique_ptr<ParameterShard>> shards;
  shards.push_back(std::make_unique<ParameterShard>(
      ShardOptions{.shard = 0,
                   .shards = 1,
                   .begin = 0,
                   .end = n,
                   .num_params = n,
                   .workers = kWorkers,
                   .mode = PsMode::kSync,
                   .optimizer = testing::OptimizerOfType(optim::OptimizerType::kSgd),
                   .timeout = std::chrono::seconds(20),
                   .backup_workers = 1}));
  BOOST_TEST_REQUIRE(shards[0]->Load(initial).ok());

  Seen seen;
  std::vector<std::vector<float>> finals(kWorkers);
  std::vector<Status> ran(kWorkers, Status::Error("not run"));
  std::vector<double> dropped(kWorkers);
  std::vector<std::int64_t> steps(kWorkers);
  const std::vector<Status> served = testing::ServePs(
      testing::MakeLocalPsLinks(kWorkers, 1), shards, [&](int rank, std::span<Link* const> mine) {
        SyncPsStrategy ps(mine, n, {.rank = rank, .workers = kWorkers, .backup_workers = 1});
        train::TrainOptions options = GlobalBatchOptions(kBatch, rank, kWorkers, 2);
        options.backup_workers = 1;
        options.log_every = 5;
        train::Trainer trainer(model, options, set, nullptr, data::ConstantScaling(1.0f), ps);
        trainer.InitParams();
        // Rank 2 stalls at its 4th step of each run until rank 0 has done 9 (the epoch has 20, and
        // its last takes every gradient, so the others never wait for it there).
        Recorder listener(seen, rank, 2, 3, 9);
        const Result<train::StopReason> why = trainer.Run(listener);
        ran[rank] = why.status();
        steps[rank] = trainer.position().step;
        dropped[rank] = listener.dropped();
        finals[rank].assign(trainer.params().begin(), trainer.params().end());
      });
  BOOST_TEST_REQUIRE(served[0].ok(), served[0].message());
  for (int r = 0; r < kWorkers; ++r) BOOST_TEST_REQUIRE(ran[r].ok(), ran[r].message());

  for (int r = 0; r < kWorkers; ++r) {
    BOOST_TEST(steps[r] == 40);
    // Every replica received the same parameters after the last step.
    BOOST_TEST((finals[r] == finals[0]), "rank " << r);
  }
  BOOST_TEST((finals[0] == testing::ShardParams(shards)));
  BOOST_TEST(seen.masks_agree);
  // Rank 2 was left out of the steps it was held through: 3..8 at least (any replica may also be
  // left out of a step by the order of arrivals).
  BOOST_TEST(dropped[2] >= 6.0);
  BOOST_TEST(shards[0]->Stats().pushes_dropped >= 1u);

  // Each epoch: the taken ranks' rows of its steps are every row once.
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<int> count(set.rows, 0);
    for (std::size_t batch = 0; batch < 20; ++batch) {
      const auto mask = seen.masks.find({epoch, batch});
      const std::uint64_t taken = mask == seen.masks.end() ? 0b111 : mask->second;
      for (const auto& [rank, rows] : seen.rows[{epoch, batch}]) {
        if ((taken >> rank) & 1u) {
          for (std::uint32_t row : rows) ++count[row];
        }
      }
      if (mask == seen.masks.end()) continue;
      for (int r = 0; r < kWorkers; ++r) {
        const auto& recorded = seen.rows[{epoch, batch}];
        if ((taken >> r) & 1u) BOOST_TEST(recorded.contains(r));
      }
    }
    for (std::size_t row = 0; row < set.rows; ++row) {
      BOOST_TEST(count[row] == 1, "epoch " << epoch << " row " << row);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace dtrain::dist
