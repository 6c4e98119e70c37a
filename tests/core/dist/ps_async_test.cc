// mode = "async" (Downpour): replicas pushing to shards that apply each push on arrival converge
// on a synthetic problem, also pushing and fetching every few steps; with max_staleness = s and
// one slow replica no applied push is more than s clocks stale, while without a bound they are; a
// replica that said goodbye no longer holds the others back; a snapshot carries the version
// vector; a replica whose link dies is an error naming it, never a hang; and a malformed
// compressed push drops only its sender's link.
#include <array>
#include <bit>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <thread>

#include "core/dist/downpour_strategy.h"
#include "core/dist/local_link.h"
#include "core/dist/ps_client.h"
#include "core/math/gemm.h"
#include "replica_harness.h"

namespace dtrain::dist {
namespace ps_async_test {

BOOST_AUTO_TEST_SUITE(ps_async)

using namespace std::chrono_literals;
using testing::Blobs;
using testing::PsLinks;

constexpr std::uint64_t kSeed = 11;

bool Mentions(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

train::TrainOptions Options(int rank, int world, std::int64_t steps, float lr = 0.1f) {
  train::TrainOptions o;
  o.epochs = 0;
  o.steps = steps;
  o.batch_size = 16;
  o.seed = kSeed;
  o.schedule.lr = lr;
  o.rank = rank;
  o.world_size = world;
  o.sharding = data::ShardMode::kContiguousShards;
  return o;
}

optim::OptimizerOptions Adagrad() {
  optim::OptimizerOptions o;
  o.type = optim::OptimizerType::kAdagrad;
  return o;
}

// Delegates to `inner` after sleeping: a replica on a slower machine.
class Slow final : public train::Strategy {
 public:
  Slow(train::Strategy& inner, std::chrono::microseconds delay) : inner_(inner), delay_(delay) {}
  Status Apply(std::int64_t step, std::span<float> params, std::span<float> grad, float lr,
               const train::StepShare& share) override {
    std::this_thread::sleep_for(delay_);
    return inner_.Apply(step, params, grad, lr, share);
  }
  optim::Optimizer* LocalOptimizer() override { return nullptr; }

 private:
  train::Strategy& inner_;
  std::chrono::microseconds delay_;
};

struct AsyncRun {
  std::vector<Status> served;
  std::vector<ShardStats> shard_stats;
  std::vector<Status> workers;
  std::vector<DownpourStats> worker_stats;
  std::vector<float> final_params;  // the shards' ranges put together
};

struct AsyncSetup {
  int workers = 2;
  int shards = 2;
  int push_every = 1;
  int fetch_every = 1;
  int max_staleness = 0;
  std::int64_t steps = 40;
  std::vector<std::int64_t> steps_of = {};            // per rank, overriding `steps` when not empty
  std::vector<std::chrono::microseconds> delay = {};  // per rank, when not empty
  std::chrono::milliseconds timeout = 10s;
};

AsyncRun RunAsync(const model::Model& model, const data::Dataset& set, const AsyncSetup& setup) {
  math::SetBlasThreads(1);
  AsyncRun run;
  run.workers.assign(setup.workers, Status::Error("not run"));
  run.worker_stats.resize(setup.workers);
  auto servers = testing::MakeShards(model, kSeed, setup.workers, setup.shards, PsMode::kAsync,
                                     Adagrad(), setup.max_staleness, setup.timeout);
  run.served = testing::ServePs(
      testing::MakeLocalPsLinks(setup.workers, setup.shards), servers,
      [&](int rank, std::span<Link* const> mine) {
        DownpourStrategy downpour(mine, model.NumParams(),
                                  {.rank = rank,
                                   .workers = setup.workers,
                                   .push_every = setup.push_every,
                                   .fetch_every = setup.fetch_every,
                                   .max_staleness = setup.max_staleness,
                                   .clip_norm = 0.0f,
                                   .timeout = setup.timeout});
        const auto delay = setup.delay.empty() ? 0us : setup.delay[rank];
        Slow slow(downpour, delay);
        const std::int64_t steps = setup.steps_of.empty() ? setup.steps : setup.steps_of[rank];
        Result<std::vector<float>> trained = testing::TrainWithStrategy(
            model, set, Options(rank, setup.workers, steps), slow,
            [&](std::span<float> params) { return downpour.Connect(params, 0); });
        Status finished = downpour.Finish();
        run.workers[rank] = trained.ok() ? finished : trained.status();
        run.worker_stats[rank] = downpour.WorkerStats();
      });
  for (const auto& s : servers) run.shard_stats.push_back(s->Stats());
  run.final_params = testing::ShardParams(servers);
  return run;
}

void RequireOk(const AsyncRun& run) {
  for (std::size_t k = 0; k < run.served.size(); ++k) {
    BOOST_TEST_REQUIRE(run.served[k].ok(), "shard " << k << ": " << run.served[k].message());
  }
  for (std::size_t r = 0; r < run.workers.size(); ++r) {
    BOOST_TEST_REQUIRE(run.workers[r].ok(), "rank " << r << ": " << run.workers[r].message());
  }
}

train::EvalResult Evaluate(const model::Model& model, const data::Dataset& set,
                           std::span<const float> params) {
  train::LocalStrategy unused(optim::MakeOptimizer({}, 0, model.NumParams()), 0.0f);
  train::Trainer t(model, Options(0, 1, 1), set, nullptr, data::ConstantScaling(1.0f), unused);
  std::copy(params.begin(), params.end(), t.params().begin());
  return t.Evaluate(set).value();
}

BOOST_AUTO_TEST_CASE(downpour_converges_on_blobs) {
  const data::Dataset set = Blobs(960);
  const model::Model model(testing::SmallSpec());
  std::vector<float> initial(model.NumParams());
  model.Init(initial, kSeed);
  const train::EvalResult start = Evaluate(model, set, initial);
  struct Case {
    int push_every, fetch_every, max_staleness;
  };
  for (const Case c : {Case{1, 1, 0}, Case{2, 3, 2}, Case{4, 2, 1}}) {
    BOOST_TEST_CONTEXT("push_every " << c.push_every << ", fetch_every " << c.fetch_every
                                     << ", max_staleness " << c.max_staleness) {
      AsyncSetup setup{.workers = 3,
                       .shards = 2,
                       .push_every = c.push_every,
                       .fetch_every = c.fetch_every,
                       .max_staleness = c.max_staleness,
                       .steps = 60};
      AsyncRun run = RunAsync(model, set, setup);
      RequireOk(run);
      const train::EvalResult end = Evaluate(model, set, run.final_params);
      BOOST_TEST_MESSAGE("loss " << start.loss << " -> " << end.loss << ", accuracy "
                                 << start.accuracy << " -> " << end.accuracy);
      BOOST_TEST(end.loss < 0.3 * start.loss);
      BOOST_TEST(end.accuracy > 0.9);
      // Every push applied on every shard: ceil(steps / push_every) per replica (Finish pushes
      // the last partial window).
      const std::uint64_t pushes = (60 + c.push_every - 1) / c.push_every;
      for (const ShardStats& s : run.shard_stats) {
        BOOST_TEST(s.pushes_applied == 3 * pushes);
        BOOST_TEST(s.steps == 3 * pushes);
      }
      for (const DownpourStats& w : run.worker_stats) {
        BOOST_TEST(w.pushes == pushes);
        BOOST_TEST(w.fetches <= 60u / c.fetch_every + w.forced_fetches);
        BOOST_TEST(w.fetches >= 1u);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_staleness_bound_holds_with_a_slow_replica_and_is_exceeded_without_one) {
  const data::Dataset set = Blobs(960);
  const model::Model model(testing::SmallSpec());
  for (int s : {1, 2, 0}) {
    BOOST_TEST_CONTEXT("max_staleness " << s) {
      // Rank 0 takes 4 ms a step, rank 1 no time at all.
      AsyncSetup setup{
          .workers = 2, .shards = 2, .max_staleness = s, .steps = 30, .delay = {4000us, 0us}};
      AsyncRun run = RunAsync(model, set, setup);
      RequireOk(run);
      std::uint64_t worst = 0;
      for (const ShardStats& st : run.shard_stats) {
        BOOST_TEST(st.pushes_applied == 60u);
        std::uint64_t counted = 0;
        for (std::uint64_t h : st.staleness.histogram) counted += h;
        BOOST_TEST(counted == st.pushes_applied);
        BOOST_TEST(st.staleness.Percentile(1.0) == st.staleness.max);
        worst = std::max(worst, st.staleness.max);
      }
      BOOST_TEST_MESSAGE("max staleness " << worst << ", fast replica's forced fetches "
                                          << run.worker_stats[1].forced_fetches);
      if (s > 0) {
        BOOST_TEST(worst <= static_cast<std::uint64_t>(s));
        BOOST_TEST(run.worker_stats[1].forced_fetches > 0u);  // the bound made it wait
        BOOST_TEST(run.worker_stats[1].wait_seconds > 0.0);
      } else {
        BOOST_TEST(worst > 2u);  // unbounded: the fast replica runs far ahead
        BOOST_TEST(run.worker_stats[1].forced_fetches == 0u);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_replica_that_said_goodbye_does_not_hold_back_the_bound) {
  const data::Dataset set = Blobs(960);
  const model::Model model(testing::SmallSpec());
  // Rank 1 leaves after 2 steps; rank 0 goes on to 40 with max_staleness 1. If the departed
  // replica still counted, rank 0 would wait at clock 4 until the timeout.
  AsyncSetup setup{
      .workers = 2, .shards = 2, .max_staleness = 1, .steps_of = {40, 2}, .timeout = 3s};
  const auto start = Clock::now();
  AsyncRun run = RunAsync(model, set, setup);
  RequireOk(run);
  BOOST_TEST(SecondsSince(start) < 2.0);
  for (const ShardStats& s : run.shard_stats) {
    BOOST_TEST(s.pushes_applied == 42u);
    BOOST_TEST(s.global_clock == 40u);  // only rank 0 still counted at the end
  }
}

BOOST_AUTO_TEST_CASE(an_async_snapshot_carries_the_version_vector) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(960);
  const model::Model model(testing::SmallSpec());
  const int workers = 2, shards = 2;
  auto servers =
      testing::MakeShards(model, kSeed, workers, shards, PsMode::kAsync, Adagrad(), 0, 10s);
  std::optional<Result<PsSnapshot>> snap;
  class SnapshotAt final : public train::TrainListener {
   public:
    SnapshotAt(DownpourStrategy* d, std::optional<Result<PsSnapshot>>* out) : d_(d), out_(out) {}
    void Record(std::span<const train::MetricPoint>) override {}
    bool AfterStep(const train::Trainer& trainer) override {
      if (trainer.position().step == 10) *out_ = d_->Snapshot();
      return true;
    }

   private:
    DownpourStrategy* d_;
    std::optional<Result<PsSnapshot>>* out_;
  };
  std::vector<Status> worker_status(workers, Status::Error("not run"));
  std::vector<Status> served = testing::ServePs(
      testing::MakeLocalPsLinks(workers, shards), servers,
      [&](int rank, std::span<Link* const> mine) {
        DownpourStrategy downpour(mine, model.NumParams(), {.rank = rank, .workers = workers});
        SnapshotAt at(&downpour, &snap);
        auto trained = testing::TrainWithStrategy(model, set, Options(rank, workers, 20), downpour,
                                                  {}, rank == 0 ? &at : nullptr);
        worker_status[rank] = trained.ok() ? downpour.Finish() : trained.status();
      });
  for (const Status& s : served) BOOST_TEST_REQUIRE(s.ok(), s.message());
  for (const Status& s : worker_status) BOOST_TEST_REQUIRE(s.ok(), s.message());
  BOOST_TEST_REQUIRE(snap.has_value());
  BOOST_TEST_REQUIRE(snap->ok(), snap->status().message());
  const PsSnapshot& s = snap->value();
  BOOST_TEST(s.params.size() == model.NumParams());
  BOOST_TEST_REQUIRE(s.state.size() == 1u);  // Adagrad's accumulator
  BOOST_TEST(s.state[0].size() == model.NumParams());
  for (int k = 0; k < shards; ++k) {
    BOOST_TEST_REQUIRE(s.clocks[k].size() == 2u);
    // Rank 0's ten pushes went out before its snapshot request, on the same links.
    BOOST_TEST(s.clocks[k][0] == 10u);
    BOOST_TEST(s.clocks[k][1] <= 20u);
    BOOST_TEST(s.steps[k] == s.clocks[k][0] + s.clocks[k][1]);  // one step per applied push
    BOOST_TEST(s.global_clock[k] == std::min(s.clocks[k][0], s.clocks[k][1]));
  }
}

BOOST_AUTO_TEST_CASE(an_async_worker_whose_link_closes_fails_serve_naming_it) {
  const std::size_t n = 64;
  const auto timeout = 20s;
  std::vector<std::unique_ptr<ParameterShard>> shards;
  shards.push_back(std::make_unique<ParameterShard>(ShardOptions{.shard = 0,
                                                                 .shards = 1,
                                                                 .begin = 0,
                                                                 .end = n,
                                                                 .num_params = n,
                                                                 .workers = 2,
                                                                 .mode = PsMode::kAsync,
                                                                 .max_staleness = 0,
                                                                 .optimizer = Adagrad(),
                                                                 .timeout = timeout}));
  Status survivor;
  const auto start = Clock::now();
  std::vector<Status> served = testing::ServePs(
      testing::MakeLocalPsLinks(2, 1), shards, [&](int rank, std::span<Link* const> mine) {
        PsClient client(mine, {.rank = rank,
                               .workers = 2,
                               .num_params = n,
                               .mode = PsMode::kAsync,
                               .max_staleness = 0,
                               .timeout = timeout});
        std::vector<float> params(n), grad(n, 0.5f);
        std::vector<std::uint64_t> clocks(1, 0);
        Status hello = client.Hello(params, clocks);
        if (rank == 0) survivor = hello;  // the shard may have failed already
        if (!hello.ok()) return;
        if (rank == 1) {
          for (std::uint64_t c = 0; c < 2; ++c) {
            if (!client.Push(c, grad, 0.1f, clocks).ok()) return;
          }
          mine[0]->Close();  // dies without a goodbye
          return;
        }
        // Rank 0 keeps pushing and fetching until the shard gives up.
        for (std::uint64_t c = 0; c < 100000 && SecondsSince(start) < 10.0; ++c) {
          survivor = client.Push(c, grad, 0.1f, clocks);
          if (survivor.ok()) survivor = client.Fetch(0, params, clocks);
          if (!survivor.ok()) return;
        }
      });
  BOOST_TEST(SecondsSince(start) < 5.0);
  BOOST_TEST_REQUIRE(!served[0].ok());
  BOOST_TEST_MESSAGE(served[0].message());
  BOOST_TEST(Mentions(served[0], "shard 0 of 1 [0, 64)"), served[0].message());
  BOOST_TEST(Mentions(served[0], "worker rank 1 at clock 2"), served[0].message());
  BOOST_TEST(!survivor.ok());
  BOOST_TEST(Mentions(survivor, "shard 0 of 1"), survivor.message());
}

ShardOptions RejoiningShard(std::size_t n, int workers, std::chrono::milliseconds timeout) {
  return ShardOptions{.shard = 0,
                      .shards = 1,
                      .begin = 0,
                      .end = n,
                      .num_params = n,
                      .workers = workers,
                      .mode = PsMode::kAsync,
                      .max_staleness = 0,
                      .optimizer = Adagrad(),
                      .timeout = timeout,
                      .rejoin = true};
}

// A rejoining async shard of n floats and two in-process workers: Start() serves them on a
// thread of its own, client(r) speaks for worker r, Join() waits for Serve's result.
struct TwoWorkersOneShard {
  TwoWorkersOneShard(std::size_t floats, std::chrono::milliseconds timeout)
      : n(floats), shard(RejoiningShard(floats, 2, timeout)) {}
  ~TwoWorkersOneShard() {  // after a failed check: the shard ends once its workers are gone
    if (!server.joinable()) return;
    w0.a->Close();
    w1.a->Close();
    server.join();
  }
  void Start() {
    server = std::thread([this] { served = shard.Serve(shard_ends); });
  }
  void StartFromZeros() {
    BOOST_REQUIRE(shard.Load(std::vector<float>(n, 0.0f)).ok());
    Start();
  }
  Status Join() {
    server.join();
    return served;
  }
  PsClientOptions Options(int rank) const {
    return {.rank = rank, .workers = 2, .num_params = n, .mode = PsMode::kAsync};
  }
  PsClient& client(int rank) { return rank == 0 ? c0 : c1; }
  // Serves worker `rank` over `link` once the shard has noticed, on its own thread, that the
  // rank's link broke (within 5 s).
  Status Rejoin(int rank, Link* link) {
    Status rejoined;
    for (int i = 0; i < 500; ++i) {
      rejoined = shard.Rejoin(rank, link);
      if (rejoined.ok()) break;
      std::this_thread::sleep_for(10ms);
    }
    return rejoined;
  }

  const std::size_t n;
  ParameterShard shard;
  LocalLinkPair w0 = MakeLocalLinkPair("worker rank 0", "shard 0");
  LocalLinkPair w1 = MakeLocalLinkPair("worker rank 1", "shard 0");
  std::vector<Link*> shard_ends = {w0.b.get(), w1.b.get()};
  std::vector<Link*> l0 = {w0.a.get()}, l1 = {w1.a.get()};
  PsClient c0{l0, Options(0)}, c1{l1, Options(1)};
  Status served;
  std::thread server;
};

BOOST_AUTO_TEST_CASE(a_worker_whose_link_breaks_rejoins_at_the_global_clock_and_goes_on) {
  const std::size_t n = 16;
  TwoWorkersOneShard t(n, 10s);
  t.StartFromZeros();
  std::vector<float> params(n), grad(n, 1.0f);
  std::vector<std::uint64_t> clocks(1, 0);
  BOOST_REQUIRE(t.client(0).Hello(params, clocks).ok());
  BOOST_REQUIRE(t.client(1).Hello(params, clocks).ok());
  BOOST_TEST(t.client(1).own_clock() == 0u);
  for (std::uint64_t c = 0; c < 2; ++c) {
    BOOST_REQUIRE(t.client(1).Push(c, grad, 0.1f, clocks).ok());
  }
  t.w1.a->Close();  // rank 1 dies without a goodbye: absent, not a failure
  for (std::uint64_t c = 0; c < 5; ++c) {
    BOOST_REQUIRE(t.client(0).Push(c, grad, 0.1f, clocks).ok());
  }
  // g no longer waits for the absent worker (once the shard has seen its link break).
  BOOST_REQUIRE(t.client(0).Fetch(5, params, clocks).ok());
  BOOST_TEST(clocks[0] == 5u);

  BOOST_TEST(!t.shard.Rejoin(0, t.w1.b.get()).ok());  // rank 0 is not absent
  LocalLinkPair again = MakeLocalLinkPair("worker rank 1, restarted", "shard 0");
  const Status rejoined = t.Rejoin(1, again.b.get());
  BOOST_REQUIRE_MESSAGE(rejoined.ok(), rejoined.message());
  std::vector<Link*> l1b = {again.a.get()};
  PsClient restarted(l1b, t.Options(1));
  BOOST_REQUIRE(restarted.Hello(params, clocks).ok());
  BOOST_TEST(restarted.own_clock() == 5u);  // max(its 2 pushes, g = 5)
  BOOST_REQUIRE(restarted.Push(5, grad, 0.1f, clocks).ok());
  BOOST_REQUIRE(restarted.Goodbye(6).ok());
  BOOST_REQUIRE(t.client(0).Goodbye(5).ok());
  const Status served = t.Join();
  BOOST_TEST(served.ok(), served.message());
  BOOST_TEST(t.shard.Stats().pushes_applied == 8u);  // 2 + 5 + 1: the dead one's pushes stay
}

// A compressed push whose pair points outside the slice drops that worker's link (it is absent,
// as if its link broke) and writes nothing; the other worker goes on, and a restarted process
// takes the dropped one's place.
BOOST_AUTO_TEST_CASE(a_malformed_compressed_push_drops_that_workers_link_only) {
  const std::size_t n = 16;
  TwoWorkersOneShard t(n, 10s);
  t.StartFromZeros();
  std::vector<float> params(n), grad(n, 1.0f);
  std::vector<std::uint64_t> clocks(1, 0);
  BOOST_REQUIRE(t.client(0).Hello(params, clocks).ok());
  // Worker 1 by hand: a hello announcing pushes of 2 pairs, then one whose second index is n.
  const Deadline deadline = Clock::now() + 5s;
  const auto send = [&](PsMessage kind, const PsHeader& h) {
    std::array<float, kPsHeaderFloats> raw;
    EncodePsHeader(h, raw);
    return t.w1.a->Send(PsRequestTag(kind), raw, deadline);
  };
  PsHeader hello{.from = 1,
                 .num_params = n,
                 .begin = 0,
                 .end = n,
                 .shard = 0,
                 .shards = 1,
                 .workers = 2,
                 .mode = static_cast<std::uint32_t>(PsMode::kAsync)};
  hello.flags = kPsSparsePushes;
  hello.rows = 2;
  BOOST_REQUIRE(send(PsMessage::kHello, hello).ok());
  std::array<float, kPsHeaderFloats> reply;
  BOOST_REQUIRE(t.w1.a->Recv(PsReplyTag(PsMessage::kHello), reply, deadline).ok());
  BOOST_TEST(DecodePsHeader(reply).value().rows == 2u);  // taken
  PsHeader push{.from = 1, .lr = 0.1f};
  push.flags = kPsEncodedPush;
  BOOST_REQUIRE(send(PsMessage::kPush, push).ok());
  const std::vector<float> pairs = {std::bit_cast<float>(std::uint32_t{3}),
                                    std::bit_cast<float>(static_cast<std::uint32_t>(n)), 1.0f,
                                    1.0f};
  BOOST_REQUIRE(t.w1.a->Send(PsDataTag(PsRequestTag(PsMessage::kPush)), pairs, deadline).ok());
  // Worker 0 goes on, and g does not wait for the dropped worker.
  BOOST_REQUIRE(t.client(0).Push(0, grad, 0.1f, clocks).ok());
  BOOST_REQUIRE(t.client(0).Fetch(1, params, clocks).ok());
  BOOST_TEST(t.shard.Stats().pushes_applied == 1u);  // the malformed push was not applied
  LocalLinkPair again = MakeLocalLinkPair("worker rank 1, restarted", "shard 0");
  const Status rejoined = t.Rejoin(1, again.b.get());
  BOOST_REQUIRE_MESSAGE(rejoined.ok(), rejoined.message());
  std::vector<Link*> l1b = {again.a.get()};
  PsClient restarted(l1b, t.Options(1));
  BOOST_REQUIRE(restarted.Hello({}, clocks).ok());
  BOOST_REQUIRE(restarted.Goodbye(restarted.own_clock()).ok());
  BOOST_REQUIRE(t.client(0).Goodbye(1).ok());
  const Status served = t.Join();
  BOOST_TEST(served.ok(), served.message());
}

BOOST_AUTO_TEST_CASE(clocks_loaded_from_a_checkpoint_go_on_where_they_stood) {
  TwoWorkersOneShard t(8, 5s);
  BOOST_REQUIRE(t.shard.LoadClocks(std::vector<std::uint64_t>{7, 4}).ok());
  BOOST_TEST(!t.shard.LoadClocks(std::vector<std::uint64_t>{7}).ok());  // one per worker
  t.Start();
  std::vector<float> grad(8, 1.0f);
  std::vector<std::uint64_t> clocks(1, 0);
  BOOST_REQUIRE(t.client(0).Hello({}, clocks).ok());
  BOOST_TEST(t.client(0).own_clock() == 7u);
  BOOST_TEST(clocks[0] == 4u);  // g: the slowest worker's clock
  BOOST_REQUIRE(t.client(1).Hello({}, clocks).ok());
  BOOST_TEST(t.client(1).own_clock() == 4u);
  BOOST_REQUIRE(t.client(0).Push(7, grad, 0.1f, clocks).ok());
  BOOST_REQUIRE(t.client(1).Push(4, grad, 0.1f, clocks).ok());
  BOOST_REQUIRE(t.client(0).Goodbye(8).ok());
  BOOST_REQUIRE(t.client(1).Goodbye(5).ok());
  const Status served = t.Join();
  BOOST_TEST(served.ok(), served.message());
  BOOST_TEST(t.shard.Stats().global_clock == 5u);
}

BOOST_AUTO_TEST_CASE(an_absent_worker_that_does_not_come_back_fails_serve_naming_it) {
  const std::size_t n = 8;
  ParameterShard shard(RejoiningShard(n, 1, 300ms));
  LocalLinkPair w0 = MakeLocalLinkPair("worker rank 0", "shard 0");
  std::vector<Link*> shard_ends = {w0.b.get()};
  Status served;
  std::thread server([&] { served = shard.Serve(shard_ends); });
  std::vector<Link*> l0 = {w0.a.get()};
  PsClient c0(l0, {.rank = 0, .workers = 1, .num_params = n, .mode = PsMode::kAsync});
  std::vector<float> grad(n, 1.0f);
  std::vector<std::uint64_t> clocks(1, 0);
  BOOST_REQUIRE(c0.Hello({}, clocks).ok());
  BOOST_REQUIRE(c0.Push(0, grad, 0.1f, clocks).ok());
  w0.a->Close();
  server.join();
  BOOST_TEST_REQUIRE(!served.ok());
  BOOST_TEST(Mentions(served,
                      "worker rank 0 left without a goodbye at clock 1 and did not come "
                      "back within 300 ms"),
             served.message());
}

BOOST_AUTO_TEST_CASE(a_push_of_the_wrong_clock_is_an_error_naming_both_sides) {
  const std::size_t n = 8;
  std::vector<std::unique_ptr<ParameterShard>> shards;
  shards.push_back(std::make_unique<ParameterShard>(ShardOptions{.shard = 0,
                                                                 .shards = 1,
                                                                 .begin = 0,
                                                                 .end = n,
                                                                 .num_params = n,
                                                                 .workers = 1,
                                                                 .mode = PsMode::kAsync,
                                                                 .max_staleness = 0,
                                                                 .optimizer = Adagrad(),
                                                                 .timeout = 5s}));
  std::vector<Status> served = testing::ServePs(
      testing::MakeLocalPsLinks(1, 1), shards, [&](int, std::span<Link* const> mine) {
        PsClient client(mine, {.rank = 0, .workers = 1, .num_params = n, .mode = PsMode::kAsync});
        std::vector<float> grad(n, 1.0f);
        std::vector<std::uint64_t> clocks(1, 0);
        if (!client.Hello({}, clocks).ok()) return;
        (void)client.Push(0, grad, 0.1f, clocks);
        (void)client.Push(5, grad, 0.1f, clocks);  // skips clocks 1..4
        std::vector<float> params(n);
        (void)client.Fetch(0, params, clocks);  // fails once the shard closes the link
      });
  BOOST_TEST_REQUIRE(!served[0].ok());
  BOOST_TEST(Mentions(served[0], "shard 0 of 1 [0, 8)"), served[0].message());
  BOOST_TEST(Mentions(served[0], "worker rank 0 pushed clock 5 where the shard expected clock 1"),
             served[0].message());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ps_async_test
}  // namespace dtrain::dist
