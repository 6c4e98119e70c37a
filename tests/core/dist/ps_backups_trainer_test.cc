// Backup workers through the training loop: Trainers over SyncPsStrategy and one shard that goes on
// without the slowest gradient of a step. One replica is held back (its listener waits until the
// others are several steps ahead), so its push comes late and it skips steps; the rows its dropped
// and skipped parts held are owed to the next steps. Every epoch must still take every row exactly
// once, and the replicas end with the same parameters. In an elastic job the same holds through a
// loss: a member dies while another lags; the lagging one is still answered as late, so both
// survivors stand after the same step owing the same rows, and as a membership of two (which goes
// on without one of them) they carry on from the shard's state.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/dist/sync_ps_strategy.h"
#include "core/math/gemm.h"
#include "replica_harness.h"

namespace dtrain::dist {
namespace ps_backups_trainer_test {

BOOST_AUTO_TEST_SUITE(ps_backups_trainer)

using testing::Blobs;
using testing::GlobalBatchOptions;

constexpr int kWorkers = 3;
constexpr int kBatch = 8;
constexpr std::uint64_t kSeed = 4;  // GlobalBatchOptions's

using Step = std::pair<std::uint64_t, std::size_t>;  // (epoch, batch)

// What every replica saw, shared between their threads: the rows each step took at each position
// of each world (membership size; the last record wins) and each (step, world)'s mask.
struct Seen {
  std::mutex mu;
  std::condition_variable moved;
  std::int64_t rank0_steps = 0;
  bool died = false;        // a member died
  bool regrouping = false;  // the shard told a survivor its membership regroups
  std::map<Step, std::map<int, std::map<int, std::vector<std::uint32_t>>>> rows;
  std::map<std::pair<Step, int>, std::uint64_t> masks;
  bool masks_agree = true;
};

// Records the rows and masks of the replica at `rank` (its position in its world); before taking a
// step it waits, under seen.mu, until `ready(step)` (empty: never waits).
class Recorder final : public train::TrainListener {
 public:
  Recorder(Seen& seen, int rank, std::function<bool(std::int64_t step)> ready = {})
      : seen_(seen), rank_(rank), ready_(std::move(ready)) {}
  void Record(std::span<const train::MetricPoint> points) override {
    for (const train::MetricPoint& p : points) {
      if (p.name == train::kDroppedGradients) dropped_ = p.value;
    }
  }
  void Taking(const train::Trainer& trainer) override {
    const train::Trainer::TakenBatch& b = trainer.last_batch();
    std::unique_lock lock(seen_.mu);
    if (ready_) seen_.moved.wait(lock, [&] { return ready_(b.at.step); });
    seen_.rows[{b.at.epoch, b.at.batch}][trainer.options().world_size][rank_].assign(b.rows.begin(),
                                                                                     b.rows.end());
  }
  bool AfterStep(const train::Trainer& trainer) override {
    const train::Trainer::TakenBatch& b = trainer.last_batch();
    std::lock_guard lock(seen_.mu);
    for (std::size_t i = 0; i < b.masks.size(); ++i) {
      const auto [at, fresh] = seen_.masks.try_emplace(
          {{b.at.epoch, b.at.batch + i}, trainer.options().world_size}, b.masks[i]);
      if (!fresh && at->second != b.masks[i]) seen_.masks_agree = false;
    }
    if (rank_ == 0) seen_.rank0_steps = trainer.position().step;
    seen_.moved.notify_all();
    return true;
  }
  double dropped() const { return dropped_; }

 private:
  Seen& seen_;
  int rank_;
  std::function<bool(std::int64_t)> ready_;
  double dropped_ = 0.0;
};

// Each of `epochs` epochs of `steps` steps: the rows of every step, at the positions its mask
// took in the world that applied it (the one world with a mask for it: a world without one never
// had it applied), are every row of `rows` once.
void CheckEveryRowOncePerEpoch(Seen& seen, std::size_t rows, std::uint64_t epochs,
                               std::size_t steps) {
  for (std::uint64_t epoch = 0; epoch < epochs; ++epoch) {
    std::vector<int> count(rows, 0);
    for (std::size_t batch = 0; batch < steps; ++batch) {
      int applied = 0;
      for (const auto& [world, positions] : seen.rows[{epoch, batch}]) {
        const auto mask = seen.masks.find({{epoch, batch}, world});
        if (mask == seen.masks.end()) continue;
        ++applied;
        for (int p = 0; p < world; ++p) {
          if (((mask->second >> p) & 1u) == 0) continue;
          BOOST_TEST_REQUIRE(positions.contains(p), "epoch " << epoch << " batch " << batch);
          for (std::uint32_t row : positions.at(p)) ++count[row];
        }
      }
      BOOST_TEST(applied == 1, "epoch " << epoch << " batch " << batch);
    }
    for (std::size_t row = 0; row < rows; ++row) {
      BOOST_TEST(count[row] == 1, "epoch " << epoch << " row " << row);
    }
  }
}

// The one sync shard of `model` with one backup worker (`elastic`: serving memberships), loaded
// with the parameters every replica starts from.
std::unique_ptr<ParameterShard> SmallModelShard(const model::Model& model, bool elastic) {
  const std::size_t n = model.NumParams();
  std::vector<float> initial(n);
  model.Init(initial, kSeed);
  auto shard = std::make_unique<ParameterShard>(
      ShardOptions{.shard = 0,
                   .shards = 1,
                   .begin = 0,
                   .end = n,
                   .num_params = n,
                   .workers = kWorkers,
                   .mode = PsMode::kSync,
                   .optimizer = testing::OptimizerOfType(optim::OptimizerType::kSgd),
                   .timeout = std::chrono::seconds(20),
                   .backup_workers = 1,
                   .elastic = elastic});
  BOOST_TEST_REQUIRE(shard->Load(initial).ok());
  return shard;
}

BOOST_AUTO_TEST_CASE(a_held_back_replica_is_left_out_and_every_row_is_still_taken_once) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(480);  // 20 steps of 24 rows an epoch
  const model::Model model(testing::SmallSpec());
  const std::size_t n = model.NumParams();
  std::vector<std::unique_ptr<ParameterShard>> shards;
  shards.push_back(SmallModelShard(model, false));

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
        // Rank 2 stalls at its first step from step 3 on (3, or a later one when it was left out
        // of step 2 and skipped 3) until rank 0 has done 9 (the epoch has 20, and its last takes
        // every gradient, so the others never wait for it there).
        Recorder listener(seen, rank, [&seen, rank](std::int64_t step) {
          return rank != 2 || step < 3 || seen.rank0_steps >= 9;
        });
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

  CheckEveryRowOncePerEpoch(seen, set.rows, 2, 20);
}

// An elastic job's shard with backup_workers = 1: membership 0 of three members goes on without
// the slowest of each step; member 2 is held back from step 3 until member 0 has done 9
// (dropped), and at step 20 until member 1 has died (closing its link as it takes step 25) and the
// shard has told member 0 to regroup. It then answers member 2's push of step 20 as late (up to
// step 24), and its next with a regroup reply: both survivors stand after step 24 owing the same
// rows. Membership 1 of the two (b' = 1: each step takes the first of two gradients) goes on from
// the shard's state and the leader's position and rows owed, to the end; every row is taken once
// per epoch.
BOOST_AUTO_TEST_CASE(an_elastic_membership_with_a_backup_worker_loses_a_member_and_goes_on) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(480);  // 20 steps of 24 rows an epoch
  const model::Model model(testing::SmallSpec());
  const std::size_t n = model.NumParams();
  const std::unique_ptr<ParameterShard> shard_owner = SmallModelShard(model, true);
  ParameterShard& shard = *shard_owner;
  Status served;
  std::jthread server([&] { served = shard.Serve({}); });

  // The members' trainers, each over its own link to the shard, in membership `epoch` of `world`.
  struct Member {
    testing::PsLinks links;
    std::unique_ptr<SyncPsStrategy> ps;
    std::unique_ptr<train::Trainer> trainer;
  };
  const auto join = [&](std::uint32_t epoch, int world, int position) {
    Member m{testing::MakeLocalPsLinks(1, 1), nullptr, nullptr};
    BOOST_TEST_REQUIRE(shard.Admit(m.links.shard[0][0]).ok());
    const int backups = std::min(1, world - 1);
    m.ps = std::make_unique<SyncPsStrategy>(m.links.worker[0], n,
                                            SyncPsOptions{.rank = position,
                                                          .workers = kWorkers,
                                                          .backup_workers = backups,
                                                          .membership = epoch,
                                                          .members = world});
    train::TrainOptions options = GlobalBatchOptions(kBatch, position, world, 2);
    options.global_batch = kWorkers * kBatch;
    options.backup_workers = backups;
    options.fewest_members = 2;
    options.most_members = kWorkers;
    options.log_every = 5;
    m.trainer = std::make_unique<train::Trainer>(model, options, set, nullptr,
                                                 data::ConstantScaling(1.0f), *m.ps);
    m.trainer->InitParams();
    return m;
  };
  Seen seen;
  std::vector<Member> first;
  for (int p = 0; p < kWorkers; ++p) first.push_back(join(0, kWorkers, p));
  std::vector<Status> ran(kWorkers, Status::Error("not run"));
  std::vector<double> dropped(kWorkers);
  {
    std::vector<std::jthread> threads;
    for (int p = 0; p < kWorkers; ++p) {
      threads.emplace_back([&, p] {
        Member& m = first[static_cast<std::size_t>(p)];
        Link* const link = m.links.worker[0][0];
        Recorder listener(seen, p, [&seen, p, link](std::int64_t step) {
          if (p == 1 && step == 25 && !seen.died) {
            link->Close();  // it dies
            seen.died = true;
          }
          if (p != 2) return true;
          if (step >= 3 && seen.rank0_steps < 9) return false;  // as in the case above
          return step != 20 || seen.regrouping;
        });
        if (Status s = m.ps->Connect(m.trainer->params(), m.trainer->position().step); !s.ok()) {
          ran[static_cast<std::size_t>(p)] = s;
          return;
        }
        ran[static_cast<std::size_t>(p)] = m.trainer->Run(listener).status();
        dropped[static_cast<std::size_t>(p)] = listener.dropped();
        if (p == 0) {  // told to regroup: only now does member 2 push its step 20
          std::lock_guard lock(seen.mu);
          seen.regrouping = true;
          seen.moved.notify_all();
        }
      });
    }
  }
  for (Member& m : first) m.links.worker[0][0]->Close();  // the survivors leave to regroup
  for (const Status& s : ran) BOOST_TEST_REQUIRE(!s.ok());
  BOOST_TEST(ran[0].message().find("membership 0 lost a member") != std::string::npos,
             ran[0].message());
  BOOST_TEST(ran[2].message().find("membership 0 lost a member") != std::string::npos,
             ran[2].message());
  BOOST_TEST(dropped[2] >= 6.0);
  // The lagging survivor was answered as late up to the last step applied: both stand after step
  // 24, owing the same rows to step 25.
  const train::Trainer& leader = *first[0].trainer;
  BOOST_TEST(leader.position().step == 25);
  BOOST_TEST(first[2].trainer->position().step == 25);
  BOOST_TEST((first[2].trainer->owed() == leader.owed()));

  // Membership 1: the survivors at positions 0 and 1, from the leader's place and rows owed.
  std::vector<Member> second;
  for (int p = 0; p < 2; ++p) second.push_back(join(1, 2, p));
  std::vector<Status> finished(2, Status::Error("not run"));
  std::vector<std::vector<float>> finals(2);
  {
    std::vector<std::jthread> threads;
    for (int p = 0; p < 2; ++p) {
      threads.emplace_back([&, p] {
        Member& m = second[static_cast<std::size_t>(p)];
        m.trainer->set_position(leader.position());
        m.trainer->set_owed(leader.owed());
        if (Status s = m.ps->Connect(m.trainer->params(), m.trainer->position().step); !s.ok()) {
          finished[static_cast<std::size_t>(p)] = s;
          return;
        }
        Recorder listener(seen, p);
        Status& done = finished[static_cast<std::size_t>(p)];
        done = m.trainer->Run(listener).status();
        finals[static_cast<std::size_t>(p)].assign(m.trainer->params().begin(),
                                                   m.trainer->params().end());
        if (done.ok()) done = m.ps->Finish();  // the shard serves until both said goodbye
      });
    }
  }
  for (const Status& s : finished) BOOST_TEST_REQUIRE(s.ok(), s.message());
  server.join();
  BOOST_TEST_REQUIRE(served.ok(), served.message());
  for (const Member& m : second) BOOST_TEST(m.trainer->position().step == 40);
  BOOST_TEST((finals[1] == finals[0]));
  BOOST_TEST((finals[0] == std::vector<float>(shard.params().begin(), shard.params().end())));
  BOOST_TEST(seen.masks_agree);
  BOOST_TEST(shard.Stats().pushes_dropped >= 1u);
  CheckEveryRowOncePerEpoch(seen, set.rows, 2, 20);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ps_backups_trainer_test
}  // namespace dtrain::dist
