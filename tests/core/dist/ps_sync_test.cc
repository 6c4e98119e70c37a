// mode = "sync", allreduce = "ps": N replicas pushing to K shards end bitwise identical to each
// other and equal (within float tolerance) to one replica x batch N*b on the same global batches,
// with the optimizer state sharded; a stop vote stops every replica after the same step; a
// snapshot is the single-process state at that step; and a dead, silent or misbehaving worker is
// an error naming it, never a hang.
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <thread>

#include "core/dist/ps_client.h"
#include "core/dist/sync_ps_strategy.h"
#include "core/math/gemm.h"
#include "replica_harness.h"

namespace dtrain::dist {
namespace ps_sync_test {

BOOST_AUTO_TEST_SUITE(ps_sync)

using namespace std::chrono_literals;
using testing::Blobs;
using testing::GlobalBatchOptions;
using testing::MaxRelativeDifference;
using testing::OptimizerOfType;
using testing::PsLinks;

constexpr int kBatch = 16;
constexpr std::uint64_t kSeed = 4;  // GlobalBatchOptions's, so that the shards start as replicas do

bool Mentions(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One replica with batch world * kBatch on the same global batches; its final parameters and
// optimizer state.
struct Single {
  std::vector<float> params;
  std::vector<std::vector<float>> state;
  std::uint64_t steps = 0;
};

Single Reference(const model::Model& model, const data::Dataset& set, int world,
                 const optim::OptimizerOptions& opt, const train::TrainOptions& options) {
  train::LocalStrategy single(optim::MakeOptimizer(opt, 0, model.NumParams()), 0.0f);
  train::Trainer reference(model, options, set, nullptr, data::ConstantScaling(1.0f), single);
  reference.InitParams();
  train::NullListener quiet;
  BOOST_TEST_REQUIRE(reference.Run(quiet).ok());
  (void)world;
  Single out{std::vector<float>(reference.params().begin(), reference.params().end()), {}, 0};
  for (std::span<float> v : single.LocalOptimizer()->StateVectors()) {
    out.state.emplace_back(v.begin(), v.end());
  }
  out.steps = single.LocalOptimizer()->steps();
  return out;
}

struct SyncRun {
  std::vector<Result<std::vector<float>>> finals;
  std::vector<Status> served;
  std::vector<ShardStats> stats;
  std::vector<train::CommStats> comm;  // per worker, after its goodbye
};

// N replicas (threads) with SyncPsStrategy over `links` to K shards (threads).
SyncRun RunSync(const model::Model& model, const data::Dataset& set, PsLinks links, int workers,
                int shards, const optim::OptimizerOptions& opt, float clip_norm = 0.0f) {
  SyncRun run;
  run.finals.assign(static_cast<std::size_t>(workers), Status::Error("not run"));
  run.comm.resize(static_cast<std::size_t>(workers));
  auto servers = testing::MakeShards(model, kSeed, workers, shards, PsMode::kSync, opt);
  BOOST_TEST_REQUIRE(servers.size() == static_cast<std::size_t>(shards));
  run.served = testing::ServePs(links, servers, [&](int rank, std::span<Link* const> mine) {
    SyncPsStrategy ps(mine, model.NumParams(),
                      {.rank = rank, .workers = workers, .clip_norm = clip_norm});
    run.finals[rank] =
        testing::TrainWithStrategy(model, set, GlobalBatchOptions(kBatch, rank, workers), ps,
                                   [&](std::span<float> params) { return ps.Connect(params, 0); });
    if (Status bye = ps.Finish(); !bye.ok() && run.finals[rank].ok()) run.finals[rank] = bye;
    run.comm[rank] = ps.Stats();
  });
  for (const auto& s : servers) run.stats.push_back(s->Stats());
  return run;
}

void CheckMatchesReference(const SyncRun& run, const Single& reference, int workers) {
  for (std::size_t k = 0; k < run.served.size(); ++k) {
    BOOST_TEST_REQUIRE(run.served[k].ok(), "shard " << k << ": " << run.served[k].message());
  }
  for (int r = 0; r < workers; ++r) {
    BOOST_TEST_REQUIRE(run.finals[r].ok(), run.finals[r].status().message());
  }
  for (int r = 1; r < workers; ++r) {
    BOOST_TEST((run.finals[r].value() == run.finals[0].value()), "rank " << r << " differs");
  }
  const double worst = MaxRelativeDifference(run.finals[0].value(), reference.params);
  BOOST_TEST_MESSAGE("max relative difference " << worst);
  BOOST_TEST(worst < 1e-5);
  for (const ShardStats& s : run.stats) {
    BOOST_TEST(s.steps == reference.steps);
    BOOST_TEST(s.pushes_applied == reference.steps * static_cast<std::uint64_t>(workers));
    BOOST_TEST(s.staleness.max == 0u);
  }
  // Every byte accounted for: a header per message each way, the gradient out and the
  // parameters back every step, the parameters once more at the hello.
  const std::uint64_t header = kPsHeaderFloats * sizeof(float);
  const std::uint64_t shards = run.served.size();
  const std::uint64_t floats = reference.params.size() * sizeof(float);
  for (int r = 0; r < workers; ++r) {
    const train::CommStats& c = run.comm[r];
    BOOST_TEST(c.bytes_sent == (reference.steps + 2) * shards * header + reference.steps * floats);
    BOOST_TEST(c.bytes_received ==
               (reference.steps + 2) * shards * header + (reference.steps + 1) * floats);
    BOOST_TEST(c.comm_seconds > 0.0);
    BOOST_TEST(c.wait_seconds <= c.comm_seconds);
  }
}

BOOST_AUTO_TEST_CASE(n_replicas_over_k_shards_match_one_replica_with_n_times_the_batch) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(480);
  const model::Model model(testing::SmallSpec());
  const optim::OptimizerOptions momentum = OptimizerOfType(optim::OptimizerType::kMomentum);
  for (int workers : {2, 3, 4}) {
    const Single reference =
        Reference(model, set, workers, momentum, GlobalBatchOptions(kBatch * workers, 0, 1));
    for (int shards : {1, 2, 3}) {
      BOOST_TEST_CONTEXT("workers " << workers << ", shards " << shards) {
        SyncRun run = RunSync(model, set, testing::MakeLocalPsLinks(workers, shards), workers,
                              shards, momentum);
        CheckMatchesReference(run, reference, workers);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(sharded_adam_and_adagrad_state_match_one_replica) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(480);
  const model::Model model(testing::SmallSpec());
  for (auto type : {optim::OptimizerType::kAdam, optim::OptimizerType::kAdagrad}) {
    const int workers = type == optim::OptimizerType::kAdam ? 3 : 2;
    const int shards = type == optim::OptimizerType::kAdam ? 3 : 2;
    BOOST_TEST_CONTEXT(optim::OptimizerTypeName(type)) {
      const Single reference = Reference(model, set, workers, OptimizerOfType(type),
                                         GlobalBatchOptions(kBatch * workers, 0, 1));
      SyncRun run = RunSync(model, set, testing::MakeLocalPsLinks(workers, shards), workers, shards,
                            OptimizerOfType(type));
      CheckMatchesReference(run, reference, workers);
    }
  }
}

// The shards hold batchnorm's running statistics at their initial values (their gradient is 0);
// the replica keeps its own across every exchange, so one replica trains as single mode does.
BOOST_AUTO_TEST_CASE(one_replica_with_batchnorm_keeps_its_running_statistics) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(480);
  const model::Model model(testing::BatchNormSpec());
  BOOST_TEST_REQUIRE(model.StatisticRanges().size() == 1u);
  const optim::OptimizerOptions momentum = OptimizerOfType(optim::OptimizerType::kMomentum);
  const Single reference = Reference(model, set, 1, momentum, GlobalBatchOptions(kBatch, 0, 1));
  SyncRun run = RunSync(model, set, testing::MakeLocalPsLinks(1, 2), 1, 2, momentum);
  CheckMatchesReference(run, reference, 1);
  const model::ParamRange stats = model.StatisticRanges().front();
  BOOST_TEST(reference.params[stats.offset] != 0.0f);  // the running mean moved
}

// Each replica clips its own gradient (documented): with one replica that is single mode's clip.
BOOST_AUTO_TEST_CASE(one_replica_clips_like_single_mode) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(480);
  const model::Model model(testing::SmallSpec());
  const optim::OptimizerOptions sgd = OptimizerOfType(optim::OptimizerType::kSgd);
  const float clip = 0.05f;  // below the gradients' norms: clipping changes every step
  train::LocalStrategy single(optim::MakeOptimizer(sgd, 0, model.NumParams()), clip);
  Result<std::vector<float>> reference =
      testing::TrainWithStrategy(model, set, GlobalBatchOptions(kBatch, 0, 1), single);
  train::LocalStrategy unclipped(optim::MakeOptimizer(sgd, 0, model.NumParams()), 0.0f);
  Result<std::vector<float>> plain =
      testing::TrainWithStrategy(model, set, GlobalBatchOptions(kBatch, 0, 1), unclipped);
  BOOST_TEST_REQUIRE(reference.ok());
  BOOST_TEST_REQUIRE(plain.ok());
  BOOST_TEST_REQUIRE(MaxRelativeDifference(plain.value(), reference.value()) > 1e-3);
  SyncRun run = RunSync(model, set, testing::MakeLocalPsLinks(1, 2), 1, 2, sgd, clip);
  BOOST_TEST_REQUIRE(run.finals[0].ok(), run.finals[0].status().message());
  BOOST_TEST(MaxRelativeDifference(run.finals[0].value(), reference.value()) < 1e-5);
}

BOOST_AUTO_TEST_CASE(replicas_over_tcp_match_one_replica) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(480);
  const model::Model model(testing::SmallSpec());
  const int workers = 3, shards = 2;
  const optim::OptimizerOptions adam = OptimizerOfType(optim::OptimizerType::kAdam);
  std::string error;
  PsLinks links = testing::MakeTcpPsLinks(workers, shards, &error);
  BOOST_TEST_REQUIRE(!links.owned.empty(), error);
  const Single reference =
      Reference(model, set, workers, adam, GlobalBatchOptions(kBatch * workers, 0, 1));
  SyncRun run = RunSync(model, set, std::move(links), workers, shards, adam);
  CheckMatchesReference(run, reference, workers);
}

// ---- Stop votes ------------------------------------------------------------------------------

// At `at` steps completed: proposes `reason` through the strategy (as a target check would), or
// asks the trainer to stop (kRequested, as a signal would).
class Proposer final : public train::TrainListener {
 public:
  Proposer(train::Strategy* strategy, std::int64_t at, std::optional<train::StopReason> reason)
      : strategy_(strategy), at_(at), reason_(reason) {}
  void Record(std::span<const train::MetricPoint>) override {}
  bool AfterStep(const train::Trainer& trainer) override {
    if (trainer.position().step != at_ || !reason_) return true;
    if (*reason_ == train::StopReason::kRequested) return false;
    strategy_->ProposeStop(*reason_);
    return true;
  }

 private:
  train::Strategy* strategy_;  // the replica's strategy, which outlives its trainer
  std::int64_t at_;
  std::optional<train::StopReason> reason_;
};

struct Stopped {
  Result<train::StopReason> why = Status::Error("not run");
  std::int64_t steps = 0;
  std::vector<float> params;
};

std::vector<Stopped> RunWithVotes(int workers,
                                  const std::vector<std::optional<train::StopReason>>& proposals,
                                  std::int64_t at, std::vector<Status>* served) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(480);
  const model::Model model(testing::SmallSpec());
  auto servers = testing::MakeShards(model, kSeed, workers, 2, PsMode::kSync,
                                     OptimizerOfType(optim::OptimizerType::kSgd));
  std::vector<Stopped> ended(static_cast<std::size_t>(workers));
  *served = testing::ServePs(
      testing::MakeLocalPsLinks(workers, 2), servers, [&](int rank, std::span<Link* const> mine) {
        SyncPsStrategy ps(mine, model.NumParams(), {.rank = rank, .workers = workers});
        train::Trainer trainer(model, GlobalBatchOptions(kBatch, rank, workers, 10), set, nullptr,
                               data::ConstantScaling(1.0f), ps);
        trainer.InitParams();
        Proposer listener(&ps, at, proposals[rank]);
        ended[rank].why = trainer.Run(listener);
        ended[rank].steps = trainer.position().step;
        ended[rank].params.assign(trainer.params().begin(), trainer.params().end());
      });
  return ended;
}

BOOST_AUTO_TEST_CASE(one_replica_asks_to_stop_and_every_replica_stops_after_the_same_step) {
  using train::StopReason;
  struct Case {
    std::vector<std::optional<StopReason>> proposals;
    StopReason agreed;
  };
  const std::vector<Case> cases = {
      {{std::nullopt, StopReason::kRequested, std::nullopt}, StopReason::kRequested},
      {{std::nullopt, std::nullopt, StopReason::kTargetReached}, StopReason::kTargetReached},
      // Requested is more urgent than target reached.
      {{StopReason::kTargetReached, std::nullopt, StopReason::kRequested}, StopReason::kRequested},
  };
  for (std::size_t c = 0; c < cases.size(); ++c) {
    BOOST_TEST_CONTEXT("case " << c) {
      std::vector<Status> served;
      const std::int64_t at = 5;  // proposed once 5 steps are done: carried by step 5's push
      std::vector<Stopped> ended = RunWithVotes(3, cases[c].proposals, at, &served);
      for (const Status& s : served) BOOST_TEST(s.ok(), s.message());
      for (std::size_t r = 0; r < ended.size(); ++r) {
        BOOST_TEST_REQUIRE(ended[r].why.ok(), ended[r].why.status().message());
        BOOST_TEST((ended[r].why.value() == cases[c].agreed), "rank " << r);
        BOOST_TEST(ended[r].steps == at + 1, "rank " << r);
        BOOST_TEST((ended[r].params == ended[0].params), "rank " << r);
      }
    }
  }
}

// ---- Snapshots -------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(a_sync_snapshot_is_the_single_process_state_at_that_step) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(480);
  const model::Model model(testing::SmallSpec());
  const int workers = 2, shards = 3;
  const std::int64_t at = 7;
  const optim::OptimizerOptions adam = OptimizerOfType(optim::OptimizerType::kAdam);
  train::TrainOptions single = GlobalBatchOptions(kBatch * workers, 0, 1);
  single.epochs = 0;
  single.steps = at;  // the lr is constant, so a shorter run sees the same rates
  const Single reference = Reference(model, set, workers, adam, single);

  // Rank 0 takes a snapshot after `at` steps, while rank 1 may already be pushing the next one.
  class SnapshotAt final : public train::TrainListener {
   public:
    SnapshotAt(SyncPsStrategy* ps, std::int64_t at, std::optional<Result<PsSnapshot>>* out)
        : ps_(ps), at_(at), out_(out) {}
    void Record(std::span<const train::MetricPoint>) override {}
    bool AfterStep(const train::Trainer& trainer) override {
      if (trainer.position().step == at_) *out_ = ps_->Snapshot();
      return true;
    }

   private:
    SyncPsStrategy* ps_;
    std::int64_t at_;
    std::optional<Result<PsSnapshot>>* out_;
  };

  std::optional<Result<PsSnapshot>> snap;
  auto servers = testing::MakeShards(model, kSeed, workers, shards, PsMode::kSync, adam);
  std::vector<Result<std::vector<float>>> finals(workers, Status::Error("not run"));
  std::vector<Status> served = testing::ServePs(
      testing::MakeLocalPsLinks(workers, shards), servers,
      [&](int rank, std::span<Link* const> mine) {
        SyncPsStrategy ps(mine, model.NumParams(), {.rank = rank, .workers = workers});
        SnapshotAt listener(&ps, rank == 0 ? at : -1, &snap);
        finals[rank] = testing::TrainWithStrategy(
            model, set, GlobalBatchOptions(kBatch, rank, workers), ps, {}, &listener);
      });
  for (const Status& s : served) BOOST_TEST_REQUIRE(s.ok(), s.message());
  BOOST_TEST_REQUIRE(snap.has_value());
  BOOST_TEST_REQUIRE(snap->ok(), snap->status().message());
  const PsSnapshot& s = snap->value();
  BOOST_TEST(MaxRelativeDifference(s.params, reference.params) < 1e-5);
  BOOST_TEST_REQUIRE(s.state.size() == 2u);  // Adam: m, v
  BOOST_TEST_REQUIRE(reference.state.size() == 2u);
  for (std::size_t i = 0; i < s.state.size(); ++i) {
    BOOST_TEST(MaxRelativeDifference(s.state[i], reference.state[i]) < 1e-5, "state " << i);
  }
  BOOST_TEST_REQUIRE(s.steps.size() == static_cast<std::size_t>(shards));
  for (int k = 0; k < shards; ++k) {
    BOOST_TEST(s.steps[k] == static_cast<std::uint64_t>(at));
    BOOST_TEST(s.global_clock[k] == static_cast<std::uint64_t>(at));
    BOOST_TEST((s.clocks[k] == std::vector<std::uint64_t>(workers, at)));
  }
  // The snapshot was not the end state: training went on past it.
  BOOST_TEST_REQUIRE(finals[0].ok(), finals[0].status().message());
  BOOST_TEST(MaxRelativeDifference(finals[0].value(), s.params) > 1e-4);
}

// A checkpoint made of a snapshot, loaded into fresh shards, continues the run bit for bit: the
// parameters, every optimizer state vector and the step count all round-trip.
BOOST_AUTO_TEST_CASE(shards_loaded_from_a_snapshot_continue_bit_for_bit) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(480);
  const model::Model model(testing::SmallSpec());
  const int workers = 2, shards = 2;
  const std::int64_t half = 7, total = 14;
  const optim::OptimizerOptions adam = OptimizerOfType(optim::OptimizerType::kAdam);
  const auto steps = [](std::int64_t n, int rank) {
    train::TrainOptions o = GlobalBatchOptions(kBatch, rank, 2);
    o.epochs = 0;
    o.steps = n;
    return o;
  };

  // Uninterrupted.
  std::vector<std::vector<float>> straight(workers);
  {
    auto servers = testing::MakeShards(model, kSeed, workers, shards, PsMode::kSync, adam);
    std::vector<Status> served = testing::ServePs(
        testing::MakeLocalPsLinks(workers, shards), servers,
        [&](int rank, std::span<Link* const> mine) {
          SyncPsStrategy ps(mine, model.NumParams(), {.rank = rank, .workers = workers});
          auto p = testing::TrainWithStrategy(model, set, steps(total, rank), ps);
          if (p.ok()) straight[rank] = std::move(p).value();
        });
    for (const Status& st : served) BOOST_TEST_REQUIRE(st.ok(), st.message());
  }

  // The first half, then a snapshot by rank 0 before its goodbye.
  std::optional<Result<PsSnapshot>> snap;
  {
    auto servers = testing::MakeShards(model, kSeed, workers, shards, PsMode::kSync, adam);
    std::vector<Status> served = testing::ServePs(
        testing::MakeLocalPsLinks(workers, shards), servers,
        [&](int rank, std::span<Link* const> mine) {
          SyncPsStrategy ps(mine, model.NumParams(), {.rank = rank, .workers = workers});
          auto p = testing::TrainWithStrategy(model, set, steps(half, rank), ps);
          if (rank == 0 && p.ok()) snap = ps.Snapshot();
        });
    for (const Status& st : served) BOOST_TEST_REQUIRE(st.ok(), st.message());
  }
  BOOST_TEST_REQUIRE(snap.has_value());
  BOOST_TEST_REQUIRE(snap->ok(), snap->status().message());
  const PsSnapshot& s = snap->value();

  // Fresh shards loaded from it; the replicas start from the shards' values at step `half`.
  auto servers = testing::MakeShards(model, kSeed + 1, workers, shards, PsMode::kSync, adam);
  const std::vector<ShardRange> ranges = ShardRanges(model.NumParams(), shards);
  for (int k = 0; k < shards; ++k) {
    const ShardRange& r = ranges[k];
    std::vector<std::span<const float>> state;
    for (const std::vector<float>& v : s.state) {
      state.push_back(std::span<const float>(v).subspan(r.begin, r.size()));
    }
    BOOST_TEST_REQUIRE(
        servers[k]
            ->Load(std::span<const float>(s.params).subspan(r.begin, r.size()), state, s.steps[k])
            .ok());
  }
  std::vector<std::vector<float>> resumed(workers);
  std::vector<Status> served = testing::ServePs(
      testing::MakeLocalPsLinks(workers, shards), servers,
      [&](int rank, std::span<Link* const> mine) {
        SyncPsStrategy ps(mine, model.NumParams(), {.rank = rank, .workers = workers});
        train::Trainer trainer(model, steps(total, rank), set, nullptr, data::ConstantScaling(1.0f),
                               ps);
        trainer.InitParams();  // other values than the checkpoint's: Connect must replace them
        trainer.set_position({.step = half, .epoch = 0, .batch = static_cast<std::size_t>(half)});
        if (!ps.Connect(trainer.params(), trainer.position().step).ok()) return;
        train::NullListener quiet;
        if (trainer.Run(quiet).ok()) {
          resumed[rank].assign(trainer.params().begin(), trainer.params().end());
        }
      });
  for (const Status& st : served) BOOST_TEST_REQUIRE(st.ok(), st.message());
  for (int r = 0; r < workers; ++r) {
    BOOST_TEST_REQUIRE(!straight[r].empty());
    BOOST_TEST((resumed[r] == straight[r]), "rank " << r);
  }
}

// ---- Failures --------------------------------------------------------------------------------

ShardOptions OneShard(std::size_t n, int workers, std::chrono::milliseconds timeout) {
  return {.shard = 0,
          .shards = 1,
          .begin = 0,
          .end = n,
          .num_params = n,
          .workers = workers,
          .mode = PsMode::kSync,
          .max_staleness = 0,
          .optimizer = {},
          .timeout = timeout};
}

PsClientOptions Client(int rank, int workers, std::size_t n, std::chrono::milliseconds timeout) {
  return {.rank = rank,
          .workers = workers,
          .num_params = n,
          .mode = PsMode::kSync,
          .max_staleness = 0,
          .timeout = timeout};
}

// A well-behaved worker: `steps` sync steps of a constant gradient.
Status GoodWorker(int rank, int workers, std::span<Link* const> links, std::size_t n, int steps,
                  std::chrono::milliseconds timeout) {
  PsClient client(links, Client(rank, workers, n, timeout));
  std::vector<float> params(n), grad(n, 0.5f);
  if (Status s = client.Hello(params); !s.ok()) return s;
  for (int t = 0; t < steps; ++t) {
    Result<std::uint32_t> vote = client.SyncStep(t, grad, 0.1f, 8, 16, kNoVote, params);
    if (!vote.ok()) return vote.status();
  }
  return client.Goodbye(steps);
}

BOOST_AUTO_TEST_CASE(a_worker_whose_link_closes_mid_run_fails_serve_naming_it) {
  for (bool tcp : {false, true}) {
    BOOST_TEST_CONTEXT((tcp ? "tcp" : "in-process")) {
      const std::size_t n = 100;
      const auto timeout = 20s;
      std::string error;
      PsLinks links = tcp ? testing::MakeTcpPsLinks(2, 1, &error) : testing::MakeLocalPsLinks(2, 1);
      BOOST_TEST_REQUIRE(!links.owned.empty(), error);
      std::vector<std::unique_ptr<ParameterShard>> shards;
      shards.push_back(std::make_unique<ParameterShard>(OneShard(n, 2, timeout)));
      Status survivor;
      const auto start = Clock::now();
      std::vector<Status> served =
          testing::ServePs(links, shards, [&](int rank, std::span<Link* const> mine) {
            if (rank == 0) {
              survivor = GoodWorker(0, 2, mine, n, 50, timeout);
              return;
            }
            // Rank 1 takes three steps, then its link dies.
            PsClient client(mine, Client(1, 2, n, timeout));
            std::vector<float> params(n), grad(n, 0.25f);
            if (!client.Hello(params).ok()) return;
            for (int t = 0; t < 3; ++t) {
              if (!client.SyncStep(t, grad, 0.1f, 8, 16, kNoVote, params).ok()) return;
            }
            mine[0]->Close();
          });
      const double seconds = SecondsSince(start);
      BOOST_TEST(seconds < 10.0);
      BOOST_TEST_REQUIRE(!served[0].ok());
      BOOST_TEST_MESSAGE(served[0].message());
      BOOST_TEST(Mentions(served[0], "shard 0 of 1 [0, 100)"), served[0].message());
      BOOST_TEST(Mentions(served[0], "worker rank 1"), served[0].message());
      BOOST_TEST(Mentions(served[0], "step 3"), served[0].message());
      // The other worker learns it promptly, from the shard closing its links.
      BOOST_TEST_REQUIRE(!survivor.ok());
      BOOST_TEST(Mentions(survivor, "worker rank 0"), survivor.message());
      BOOST_TEST(Mentions(survivor, "shard 0 of 1"), survivor.message());
    }
  }
}

BOOST_AUTO_TEST_CASE(a_silent_worker_is_an_error_naming_it_by_the_deadline) {
  const std::size_t n = 10;
  const auto timeout = 300ms;
  std::vector<std::unique_ptr<ParameterShard>> shards;
  shards.push_back(std::make_unique<ParameterShard>(OneShard(n, 2, timeout)));
  std::atomic<bool> served_done{false};
  const auto start = Clock::now();
  std::vector<Status> served = testing::ServePs(testing::MakeLocalPsLinks(2, 1), shards,
                                                [&](int rank, std::span<Link* const> mine) {
                                                  if (rank == 0) {
                                                    // Fails too once the shard gives up; the
                                                    // shard's status is what this test checks.
                                                    (void)GoodWorker(0, 2, mine, n, 5, timeout);
                                                    served_done = true;
                                                    return;
                                                  }
                                                  PsClient client(mine, Client(1, 2, n, 10s));
                                                  (void)client.Hello({});
                                                  // Then silence, until the shard has given up.
                                                  while (!served_done && SecondsSince(start) < 10.0)
                                                    std::this_thread::sleep_for(10ms);
                                                });
  BOOST_TEST(SecondsSince(start) < 5.0);
  BOOST_TEST_REQUIRE(!served[0].ok());
  BOOST_TEST(Mentions(served[0], "worker rank 1"), served[0].message());
  BOOST_TEST(Mentions(served[0], "step 0"), served[0].message());
  BOOST_TEST(Mentions(served[0], "timeout"), served[0].message());
}

// Worker 1 sends a raw push after a proper hello; worker 0 pushes step 0 properly.
std::vector<Status> ServeWithBadPush(std::uint64_t step, std::size_t floats) {
  const std::size_t n = 40;
  const auto timeout = 5s;
  std::vector<std::unique_ptr<ParameterShard>> shards;
  shards.push_back(std::make_unique<ParameterShard>(OneShard(n, 2, timeout)));
  return testing::ServePs(
      testing::MakeLocalPsLinks(2, 1), shards, [&](int rank, std::span<Link* const> mine) {
        if (rank == 0) {
          // May fail once the shard refuses the bad push; callers check the shard's status.
          (void)GoodWorker(0, 2, mine, n, 3, timeout);
          return;
        }
        PsClient client(mine, Client(1, 2, n, timeout));
        if (!client.Hello({}).ok()) return;
        PsHeader h;
        h.from = 1;
        h.clock = step;
        h.lr = 0.1f;
        h.rows = 8;
        h.total_rows = 16;
        std::array<float, kPsHeaderFloats> raw;
        EncodePsHeader(h, raw);
        const Deadline deadline = Clock::now() + timeout;
        const std::uint32_t tag = PsRequestTag(PsMessage::kPush);
        if (!mine[0]->Send(tag, raw, deadline).ok()) return;
        std::vector<float> grad(floats, 1.0f);
        (void)mine[0]->Send(PsDataTag(tag), grad, deadline);
        std::array<float, kPsHeaderFloats> reply;
        (void)mine[0]->RecvAnyTag(reply, deadline);  // fails once the shard closes the link
      });
}

BOOST_AUTO_TEST_CASE(a_push_of_the_wrong_size_is_an_error_naming_both_sides) {
  std::vector<Status> served = ServeWithBadPush(0, 33);
  BOOST_TEST_REQUIRE(!served[0].ok());
  BOOST_TEST_MESSAGE(served[0].message());
  BOOST_TEST(Mentions(served[0], "shard 0 of 1 [0, 40)"), served[0].message());
  BOOST_TEST(Mentions(served[0], "worker rank 1"), served[0].message());
  BOOST_TEST(Mentions(served[0], "40"), served[0].message());
  BOOST_TEST(Mentions(served[0], "33"), served[0].message());
}

BOOST_AUTO_TEST_CASE(a_push_of_the_wrong_step_is_an_error_naming_both_sides) {
  std::vector<Status> served = ServeWithBadPush(1, 40);
  BOOST_TEST_REQUIRE(!served[0].ok());
  BOOST_TEST_MESSAGE(served[0].message());
  BOOST_TEST(Mentions(served[0], "shard 0 of 1 [0, 40)"), served[0].message());
  BOOST_TEST(Mentions(served[0], "worker rank 1 pushed step 1"), served[0].message());
  BOOST_TEST(Mentions(served[0], "expected step 0"), served[0].message());
}

BOOST_AUTO_TEST_CASE(a_hello_that_disagrees_is_an_error_on_both_sides) {
  const std::size_t n = 40;
  std::vector<std::unique_ptr<ParameterShard>> shards;
  shards.push_back(std::make_unique<ParameterShard>(OneShard(n, 1, 5s)));
  Status client_side;
  std::vector<Status> served = testing::ServePs(testing::MakeLocalPsLinks(1, 1), shards,
                                                [&](int, std::span<Link* const> mine) {
                                                  // This worker believes in 3 workers; the shard
                                                  // serves 1.
                                                  PsClient client(mine, Client(0, 3, n, 5s));
                                                  client_side = client.Hello({});
                                                });
  BOOST_TEST_REQUIRE(!served[0].ok());
  BOOST_TEST(Mentions(served[0], "shard 0 of 1 [0, 40)"), served[0].message());
  BOOST_TEST(Mentions(served[0], "worker rank 0 said hello with workers 3"), served[0].message());
  BOOST_TEST_REQUIRE(!client_side.ok());
  BOOST_TEST(Mentions(client_side, "worker rank 0"), client_side.message());
  BOOST_TEST(Mentions(client_side, "shard 0 of 1 [0, 40)"), client_side.message());
  BOOST_TEST(Mentions(client_side, "workers: the worker has 3, the shard 1"),
             client_side.message());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ps_sync_test
}  // namespace dtrain::dist
