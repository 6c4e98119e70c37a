// Backup workers on a sync parameter-server shard (backup_workers = b): a step goes on with the
// first N - b pushes; a late push is dropped and answered with the state the others reached and
// the masks of the steps it missed; the update is the optimizer step over the taken gradients
// only, in rank order, weighted by their rows; a step that asks for every gradient waits for
// every worker; after a checkpoint's step the shard holds until rank 0's next request; a stop
// vote on a late push is published by the next step; and both sides refuse a hello whose b
// differs. The late worker waits on latches, never on timing, for what the checks depend on.
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <latch>
#include <map>
#include <optional>
#include <thread>

#include "core/dist/ps_client.h"
#include "core/dist/sync_ps_strategy.h"
#include "core/math/elementwise.h"
#include "replica_harness.h"

namespace dtrain::dist {
namespace ps_backups_test {

BOOST_AUTO_TEST_SUITE(ps_backups)

using namespace std::chrono_literals;

constexpr std::size_t kParams = 37;
constexpr int kWorkers = 3;
constexpr float kLr = 0.125f;
constexpr std::uint32_t kTotalRows = 15;  // what every push says the step's rows are
const auto kTimeout = 20s;

bool Mentions(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

std::vector<float> Initial() {
  std::vector<float> p(kParams);
  for (std::size_t i = 0; i < kParams; ++i) p[i] = 0.5f - 0.03f * static_cast<float>(i);
  return p;
}

// Worker `rank`'s gradient of `step`, and its rows: they differ by rank, so any other taken set
// or weighting gives other parameters.
std::vector<float> Gradient(int rank, std::uint64_t step) {
  std::vector<float> g(kParams);
  for (std::size_t i = 0; i < kParams; ++i) {
    g[i] = 0.1f * static_cast<float>(rank + 1) + 0.01f * static_cast<float>(step) -
           0.003f * static_cast<float>(i);
  }
  return g;
}
std::uint32_t Rows(int rank) { return 4 + static_cast<std::uint32_t>(rank); }

std::vector<std::unique_ptr<ParameterShard>> OneShard(
    int backups, std::chrono::milliseconds timeout = kTimeout) {
  std::vector<std::unique_ptr<ParameterShard>> shards;
  shards.push_back(std::make_unique<ParameterShard>(ShardOptions{.shard = 0,
                                                                 .shards = 1,
                                                                 .begin = 0,
                                                                 .end = kParams,
                                                                 .num_params = kParams,
                                                                 .workers = kWorkers,
                                                                 .mode = PsMode::kSync,
                                                                 .optimizer = {},
                                                                 .timeout = timeout,
                                                                 .backup_workers = backups}));
  BOOST_TEST_REQUIRE(shards[0]->Load(Initial()).ok());
  return shards;
}

PsClientOptions Client(int rank, int backups) {
  return {.rank = rank,
          .workers = kWorkers,
          .num_params = kParams,
          .mode = PsMode::kSync,
          .timeout = kTimeout,
          .backup_workers = backups};
}

// What a worker received from one SyncStep.
struct Reply {
  std::uint64_t pushed = 0;   // the step it pushed
  std::uint64_t reached = 0;  // the step its parameters are the state after
  std::uint32_t vote = kNoVote;
  bool checkpoint = false;
  std::vector<std::uint64_t> masks;
  std::vector<float> params;
};

struct Flags {
  bool take_all = false;
  bool checkpoint = false;
  std::uint32_t vote = kNoVote;
};

// A worker's session: hello, steps, goodbye; every reply kept. Failures go to `status`.
class Session {
 public:
  Session(int rank, std::span<Link* const> links, int backups = 1)
      : client_(links, Client(rank, backups)), rank_(rank), params_(kParams) {
    status = client_.Hello(params_);
  }
  // Pushes `step`'s gradient; returns the step it continues with.
  std::uint64_t Step(std::uint64_t step, Flags flags = {}) {
    if (!status.ok()) return step + 1;
    Result<std::uint32_t> vote =
        client_.SyncStep(step, Gradient(rank_, step), kLr, Rows(rank_), kTotalRows, flags.vote,
                         params_, flags.checkpoint, flags.take_all);
    if (!vote.ok()) {
      status = vote.status();
      return step + 1;
    }
    const std::span<const std::uint64_t> masks = client_.masks();
    replies.push_back({step, client_.clock_reached(), vote.value(), client_.checkpoint_agreed(),
                       std::vector<std::uint64_t>(masks.begin(), masks.end()), params_});
    return client_.clock_reached() + 1;
  }
  Result<PsSnapshot> Snapshot() { return client_.Snapshot(); }
  void Goodbye(std::uint64_t steps) {
    if (status.ok()) status = client_.Goodbye(steps);
  }

  Status status;
  std::vector<Reply> replies;

 private:
  PsClient client_;
  int rank_;
  std::vector<float> params_;
};

// The shard's update recomputed: from the initial values, each step's optimizer step over the
// gradients its mask took, in rank order, each weighted by its share of the taken rows.
std::map<std::uint64_t, std::vector<float>> Reference(const std::vector<std::uint64_t>& masks) {
  std::unique_ptr<optim::Optimizer> sgd = optim::MakeOptimizer({}, 0, kParams);
  std::vector<float> params = Initial();
  std::vector<float> sum(kParams);
  std::map<std::uint64_t, std::vector<float>> after;
  for (std::uint64_t step = 0; step < masks.size(); ++step) {
    std::uint32_t total = 0;
    for (int r = 0; r < kWorkers; ++r) total += ((masks[step] >> r) & 1) ? Rows(r) : 0;
    bool first = true;
    for (int r = 0; r < kWorkers; ++r) {
      if (!((masks[step] >> r) & 1)) continue;
      const auto weight = static_cast<float>(static_cast<double>(Rows(r)) / total);
      if (first) {
        math::ScaleInto(weight, Gradient(r, step), sum);
      } else {
        math::Axpy(weight, Gradient(r, step), sum);
      }
      first = false;
    }
    sgd->Step(params, sum, kLr);
    after[step] = params;
  }
  return after;
}

// Workers 0 and 1 train steps 0..k-1 while worker 2 waits; then worker 2 pushes step 0 (late),
// and all three push step k, which takes every gradient; then goodbye.
struct LateRun {
  std::vector<Status> served;
  ShardStats stats;
  std::vector<std::vector<Reply>> replies;
};

LateRun RunWithLateWorker(std::uint64_t k, std::uint32_t late_vote = kNoVote, bool tcp = false) {
  std::string error;
  const testing::PsLinks links =
      tcp ? testing::MakeTcpPsLinks(kWorkers, 1, &error) : testing::MakeLocalPsLinks(kWorkers, 1);
  BOOST_TEST_REQUIRE(!links.owned.empty(), error);
  auto shards = OneShard(1);
  std::latch others_done(2);  // workers 0 and 1 have their replies of steps 0..k-1
  std::latch late_answered(1);
  LateRun run;
  run.replies.resize(kWorkers);
  std::vector<Status> statuses(kWorkers);
  run.served = testing::ServePs(links, shards, [&](int rank, std::span<Link* const> l) {
    Session w(rank, l);
    if (rank < 2) {
      for (std::uint64_t t = 0; t < k; ++t) w.Step(t);
      others_done.count_down();
      late_answered.wait();  // so that the late push's vote is on step k, not later
      w.Step(k, {.take_all = true});
    } else {
      others_done.wait();
      const std::uint64_t next = w.Step(0, {.vote = late_vote});
      late_answered.count_down();
      w.Step(next, {.take_all = true});
    }
    w.Goodbye(k + 1);
    statuses[rank] = w.status;
    run.replies[rank] = w.replies;
  });
  for (int r = 0; r < kWorkers; ++r) BOOST_TEST(statuses[r].ok(), statuses[r].message());
  run.stats = shards[0]->Stats();
  return run;
}

void CheckLateWorker(const LateRun& run, std::uint64_t k) {
  BOOST_TEST_REQUIRE(run.served[0].ok(), run.served[0].message());
  const std::uint64_t without_2 = 0b011, everyone = 0b111;
  for (int r = 0; r < 2; ++r) {
    BOOST_TEST_CONTEXT("rank " << r) {
      BOOST_TEST_REQUIRE(run.replies[r].size() == k + 1);
      for (std::uint64_t t = 0; t <= k; ++t) {
        const Reply& reply = run.replies[r][t];
        BOOST_TEST(reply.reached == t);
        BOOST_TEST(reply.masks == std::vector<std::uint64_t>{t < k ? without_2 : everyone},
                   boost::test_tools::per_element());
      }
    }
  }
  // Worker 2's push of step 0 came after step k-1: it resumes at k, told the k masks it missed.
  BOOST_TEST_REQUIRE(run.replies[2].size() == 2u);
  const Reply& late = run.replies[2][0];
  BOOST_TEST(late.pushed == 0u);
  BOOST_TEST(late.reached == k - 1);
  BOOST_TEST(late.masks == std::vector<std::uint64_t>(k, without_2),
             boost::test_tools::per_element());
  BOOST_TEST(late.vote == kNoVote);
  BOOST_TEST(!late.checkpoint);
  BOOST_TEST(run.replies[2][1].pushed == k);
  BOOST_TEST(run.replies[2][1].masks == std::vector<std::uint64_t>{everyone},
             boost::test_tools::per_element());
  // Whoever received the state after step s holds the same bits.
  BOOST_TEST((late.params == run.replies[0][k - 1].params));
  for (int r = 1; r < kWorkers; ++r) {
    BOOST_TEST((run.replies[r].back().params == run.replies[0].back().params), "rank " << r);
  }
  for (std::uint64_t t = 0; t <= k; ++t) {
    BOOST_TEST((run.replies[1][t].params == run.replies[0][t].params), "step " << t);
  }
  BOOST_TEST(run.stats.steps == k + 1);
  BOOST_TEST(run.stats.pushes_applied == 2 * k + 3);
  BOOST_TEST(run.stats.pushes_dropped == 1u);
  BOOST_TEST(run.stats.global_clock == k + 1);
}

BOOST_AUTO_TEST_CASE(the_others_go_on_without_a_late_worker_which_resumes_where_they_are) {
  for (bool tcp : {false, true}) {
    BOOST_TEST_CONTEXT((tcp ? "tcp" : "in-process")) {
      const std::uint64_t k = 4;
      CheckLateWorker(RunWithLateWorker(k, kNoVote, tcp), k);
    }
  }
}

BOOST_AUTO_TEST_CASE(each_step_applies_the_rows_weighted_sum_of_the_taken_gradients_only) {
  const std::uint64_t k = 3;
  LateRun run = RunWithLateWorker(k);
  BOOST_TEST_REQUIRE(run.served[0].ok(), run.served[0].message());
  std::vector<std::uint64_t> masks(k, 0b011);
  masks.push_back(0b111);
  const std::map<std::uint64_t, std::vector<float>> reference = Reference(masks);
  BOOST_TEST_REQUIRE(run.replies[0].size() == k + 1);
  for (std::uint64_t t = 0; t <= k; ++t) {
    BOOST_TEST((run.replies[0][t].params == reference.at(t)), "step " << t);
  }
  // Taking worker 2's dropped gradient too would have given other parameters.
  BOOST_TEST((Reference(std::vector<std::uint64_t>(k + 1, 0b111)).at(k) != reference.at(k)));
}

BOOST_AUTO_TEST_CASE(a_step_that_asks_for_every_gradient_waits_for_the_slowest_worker) {
  // Ranks 0 and 1 (b + 1 of them, so in any N - b first pushes) ask; rank 2 comes later.
  const std::vector<std::pair<std::string, Flags>> askers = {
      {"take all", {.take_all = true}},
      {"checkpoint proposal", {.checkpoint = true}},
      {"stop vote", {.vote = 1 + static_cast<std::uint32_t>(train::StopReason::kRequested)}}};
  for (const auto& [what, flags] : askers) {
    BOOST_TEST_CONTEXT(what) {
      auto shards = OneShard(1);
      std::vector<std::vector<Reply>> replies(kWorkers);
      std::vector<Status> statuses(kWorkers);
      std::vector<Status> served = testing::ServePs(
          testing::MakeLocalPsLinks(kWorkers, 1), shards, [&](int rank, std::span<Link* const> l) {
            Session w(rank, l);
            if (rank == 2) std::this_thread::sleep_for(50ms);  // a chance to go on without it
            w.Step(0, rank < 2 ? flags : Flags{});
            w.Goodbye(1);
            statuses[rank] = w.status;
            replies[rank] = w.replies;
          });
      BOOST_TEST_REQUIRE(served[0].ok(), served[0].message());
      for (int r = 0; r < kWorkers; ++r) {
        BOOST_TEST_REQUIRE(statuses[r].ok(), statuses[r].message());
        BOOST_TEST_REQUIRE(replies[r].size() == 1u);
        BOOST_TEST(replies[r][0].reached == 0u);
        BOOST_TEST(replies[r][0].masks == std::vector<std::uint64_t>{0b111},
                   boost::test_tools::per_element());
        BOOST_TEST(replies[r][0].vote == flags.vote);
        BOOST_TEST(replies[r][0].checkpoint == flags.checkpoint);
      }
      BOOST_TEST(shards[0]->Stats().pushes_dropped == 0u);
    }
  }
}

BOOST_AUTO_TEST_CASE(after_a_checkpoint_step_rank_0s_snapshot_is_of_exactly_that_step) {
  auto shards = OneShard(1);
  std::latch others_pushing(2);
  std::optional<Result<PsSnapshot>> snap;
  std::vector<std::vector<Reply>> replies(kWorkers);
  std::vector<Status> statuses(kWorkers);
  std::vector<Status> served = testing::ServePs(
      testing::MakeLocalPsLinks(kWorkers, 1), shards, [&](int rank, std::span<Link* const> l) {
        Session w(rank, l);
        w.Step(0, {.checkpoint = true});
        std::uint64_t next = 1;
        if (rank == 0) {
          others_pushing.wait();
          std::this_thread::sleep_for(50ms);  // their pushes of step 1 have a chance to arrive
          snap = w.Snapshot();
        } else {
          others_pushing.count_down();
        }
        next = w.Step(next);  // a quorum without rank 0 may take step 1 once the hold ends
        w.Step(next, {.take_all = true});
        w.Goodbye(3);
        statuses[rank] = w.status;
        replies[rank] = w.replies;
      });
  BOOST_TEST_REQUIRE(served[0].ok(), served[0].message());
  for (int r = 0; r < kWorkers; ++r) BOOST_TEST_REQUIRE(statuses[r].ok(), statuses[r].message());
  BOOST_TEST_REQUIRE(replies[0].size() >= 2u);
  BOOST_TEST(replies[0][0].checkpoint);
  BOOST_TEST_REQUIRE(snap.has_value());
  BOOST_TEST_REQUIRE(snap->ok(), snap->status().message());
  BOOST_TEST((snap->value().params == replies[0][0].params));
  BOOST_TEST(snap->value().steps == std::vector<std::uint64_t>{1},
             boost::test_tools::per_element());
  BOOST_TEST(snap->value().global_clock == std::vector<std::uint64_t>{1},
             boost::test_tools::per_element());
  // And training went on after it.
  BOOST_TEST(shards[0]->Stats().steps == 3u);
  BOOST_TEST((replies[0].back().params != replies[0][0].params));
}

BOOST_AUTO_TEST_CASE(a_stop_vote_on_a_late_push_is_published_by_the_next_step_to_everyone) {
  const std::uint64_t k = 2;
  const std::uint32_t requested = 1 + static_cast<std::uint32_t>(train::StopReason::kRequested);
  LateRun run = RunWithLateWorker(k, requested);
  BOOST_TEST_REQUIRE(run.served[0].ok(), run.served[0].message());
  BOOST_TEST_REQUIRE(run.replies[2].size() == 2u);
  BOOST_TEST(run.replies[2][0].reached == k - 1);
  BOOST_TEST(run.replies[2][0].vote == kNoVote);  // steps 0..k-1 were published without it
  for (int r = 0; r < kWorkers; ++r) {
    BOOST_TEST_CONTEXT("rank " << r) {
      const Reply& last = run.replies[r].back();
      BOOST_TEST(last.pushed == k);
      BOOST_TEST(last.vote == requested);
      BOOST_TEST(last.masks == std::vector<std::uint64_t>{0b111}, boost::test_tools::per_element());
      for (std::size_t i = 0; i + 1 < run.replies[r].size(); ++i) {
        BOOST_TEST(run.replies[r][i].vote == kNoVote, "reply " << i);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_silent_worker_fails_a_step_that_takes_every_gradient_naming_it) {
  auto shards = OneShard(1, 300ms);
  std::latch shard_done(2);  // ranks 0 and 1 have failed
  std::vector<Status> served = testing::ServePs(
      testing::MakeLocalPsLinks(kWorkers, 1), shards, [&](int rank, std::span<Link* const> l) {
        Session w(rank, l);
        if (rank < 2) {
          w.Step(0, {.take_all = true});  // fails once the shard gives up
          shard_done.count_down();
        } else {
          shard_done.wait();  // silent until then
        }
      });
  BOOST_TEST_REQUIRE(!served[0].ok());
  BOOST_TEST(Mentions(served[0], "worker rank 2"), served[0].message());
  BOOST_TEST(Mentions(served[0], "timeout"), served[0].message());
}

// The strategy carries the trainer's take_all and hands the masks to it; its checkpoints are
// collective (the proposal makes the step take every gradient) with backup workers only.
BOOST_AUTO_TEST_CASE(sync_ps_strategy_takes_all_on_request_and_exposes_the_masks) {
  for (int backups : {0, 1}) {
    BOOST_TEST_CONTEXT("backup_workers " << backups) {
      auto shards = OneShard(backups);
      std::vector<std::vector<std::uint64_t>> masks(kWorkers);
      std::vector<char> collective(kWorkers);  // not vector<bool>: one thread per element
      std::vector<Status> applied(kWorkers);
      std::vector<Status> served = testing::ServePs(
          testing::MakeLocalPsLinks(kWorkers, 1), shards, [&](int rank, std::span<Link* const> l) {
            SyncPsStrategy ps(l, kParams,
                              {.rank = rank,
                               .workers = kWorkers,
                               .timeout = kTimeout,
                               .compression = {},
                               .optimizer_state_vectors = 0,
                               .backup_workers = backups});
            std::vector<float> params(kParams), grad = Gradient(rank, 0);
            applied[rank] = ps.Connect(params, 0);
            if (applied[rank].ok()) {
              if (rank == 2) std::this_thread::sleep_for(50ms);  // a chance to go on without it
              applied[rank] = ps.Apply(0, params, grad, kLr, {Rows(rank), kTotalRows, true});
            }
            const std::span<const std::uint64_t> taken = ps.TakenMasks();
            masks[rank].assign(taken.begin(), taken.end());
            collective[rank] = ps.CollectiveCheckpoints();
          });
      BOOST_TEST_REQUIRE(served[0].ok(), served[0].message());
      const std::vector<std::uint64_t> want =
          backups > 0 ? std::vector<std::uint64_t>{0b111} : std::vector<std::uint64_t>{};
      for (int r = 0; r < kWorkers; ++r) {
        BOOST_TEST_REQUIRE(applied[r].ok(), applied[r].message());
        BOOST_TEST(masks[r] == want, boost::test_tools::per_element());
        BOOST_TEST((collective[r] != 0) == (backups > 0));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_hello_with_other_backup_workers_fails_both_sides_naming_both_values) {
  auto shards = OneShard(1);
  std::vector<Status> statuses(kWorkers);
  std::vector<Status> served = testing::ServePs(
      testing::MakeLocalPsLinks(kWorkers, 1), shards, [&](int rank, std::span<Link* const> l) {
        Session w(rank, l, rank == 1 ? 2 : 1);  // rank 1 believes in 2 backup workers
        statuses[rank] = w.status;
      });
  BOOST_TEST_REQUIRE(!served[0].ok());
  BOOST_TEST(Mentions(served[0],
                      "worker rank 1 said hello with backup_workers 2 where the "
                      "shard has 1"),
             served[0].message());
  BOOST_TEST_REQUIRE(!statuses[1].ok());
  BOOST_TEST(Mentions(statuses[1], "backup_workers: the worker has 2, the shard 1"),
             statuses[1].message());
}

BOOST_AUTO_TEST_CASE(backup_workers_are_refused_where_they_do_not_apply) {
  ParameterShard two_shards({.shard = 0,
                             .shards = 2,
                             .begin = 0,
                             .end = 19,
                             .num_params = kParams,
                             .workers = kWorkers,
                             .optimizer = {},
                             .backup_workers = 1});
  Status s = two_shards.Load(std::vector<float>(19));
  BOOST_TEST(Mentions(s, "backup workers need sync mode, one shard"), s.message());
  ParameterShard all_backups({.begin = 0,
                              .end = kParams,
                              .num_params = kParams,
                              .workers = kWorkers,
                              .optimizer = {},
                              .backup_workers = kWorkers});
  s = all_backups.Load(Initial());
  BOOST_TEST(Mentions(s, "backup_workers must be in [0, 3)"), s.message());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace ps_backups_test
}  // namespace dtrain::dist
