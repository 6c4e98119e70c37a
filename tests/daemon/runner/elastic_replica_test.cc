// ElasticReplica: three replicas of an elastic job (min_workers = 2), threads of this process
// over real loopback links, with a coordinator of the test's own. Replica 2 leaves its ring (its
// links closed) after step 10 and dies; the two survivors regroup in place and train on as a world
// of two with the same global batch; a replacement for rank 2 joins at step 25 (rank 1 is told
// and leaves the ring at a step boundary, so rank 0's next step fails and it regroups too), takes
// the leader's state and trains to the end with them.
// All three end at the planned step with the same parameters bit for bit, every step's rows
// (DTRAIN_RECORD_ROWS) over its whole world are the global batch one replica of batch
// workers x batch_size would take, and workers_active follows the world.
// The same in mode "local" (average_every = 4): a replica that left its ring fails its very next
// step, but its peers, not told here, find the ring failed only at their next average; every
// regroup rolls back to the average before (steps 8 and 24), whose state each member kept; the
// checkpoints are written right after averages.
#include "daemon/runner/elastic_replica.h"

#include <algorithm>
#include <atomic>
#include <boost/test/unit_test.hpp>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "common/temp_dir.h"
#include "config/job_file.h"
#include "core/data/sampler.h"

namespace dtrain::runner {
namespace elastic_replica_test {

using namespace std::chrono_literals;
using dtrain::testing::TempDir;

constexpr int kWorkers = 3, kBatch = 8, kSteps = 60, kRows = 2880, kSeed = 5;
constexpr int kVictim = 2;
constexpr std::int64_t kDeathStep = 10, kJoinStep = 25;
constexpr int kAverageEvery = 4;  // mode "local"
const std::string kToken = "elastic-test-token";

// An elastic job of mode `mode` ("sync", or "local" averaging every kAverageEvery steps).
config::JobConfig ElasticJob(const TempDir& dir, const std::string& mode = "sync") {
  const std::string text =
      "name = \"elastic\"\n"
      "[data]\nformat = \"synthetic\"\nsynthetic = \"blobs\"\nrows = " +
      std::to_string(kRows) +
      "\nclasses = 3\n"
      "[model]\ntype = \"mlp\"\nhidden = [12]\nactivation = \"tanh\"\n"
      "[train]\nepochs = 0\nsteps = " +
      std::to_string(kSteps) + "\nbatch_size = " + std::to_string(kBatch) +
      "\nseed = " + std::to_string(kSeed) +
      "\nlog_every = 5\n"
      "[optimizer]\ntype = \"adam\"\nlr = 0.01\n"
      "[cluster]\nworkers = 3\nmode = \"" +
      mode + "\"\ntimeout_seconds = 30\n" +
      (mode == "local" ? "average_every = " + std::to_string(kAverageEvery) + "\n" : "") +
      "[checkpoint]\nevery_steps = 20\n";
  config::LoadResult loaded = config::ParseJobText(text, "elastic.toml", {}, dir.Path(""));
  BOOST_REQUIRE(loaded.ok());
  config::JobConfig job = *loaded.job;
  job.cluster.min_workers = 2;
  return job;
}

// The coordinator's regroup rounds, as control_protocol.md has them: a round completes when every
// expected rank has asked; members = those that asked, the leader the one with the fewest steps
// completed (ties: the lowest rank; never a joiner).
class TestCoordinator {
 public:
  TestCoordinator(std::set<int> expected, std::vector<dist::Endpoint> peers)
      : expected_(std::move(expected)), peers_(std::move(peers)) {}

  Result<Membership> Ask(int rank, const RegroupRequest& request) {
    std::unique_lock lock(mu_);
    asked_[rank] = request;
    if (request.completed_step >= 0) offered_.push_back(request.completed_step);
    const std::size_t round = answers_.size();
    CompleteIfReady();
    if (!cv_.wait_for(lock, 60s, [&] { return answers_.size() > round; })) {
      return Status::Error("no regroup answer within 60 s");
    }
    return answers_[round];
  }
  // The rank is gone: the round goes on without it.
  void Lose(int rank) {
    std::lock_guard lock(mu_);
    expected_.erase(rank);
    CompleteIfReady();
  }
  // A replacement for `rank`, listening at `endpoint`, takes part in the next round.
  void Admit(int rank, dist::Endpoint endpoint) {
    std::lock_guard lock(mu_);
    expected_.insert(rank);
    peers_[static_cast<std::size_t>(rank)] = std::move(endpoint);
  }
  std::size_t Rounds() {
    std::lock_guard lock(mu_);
    return answers_.size();
  }
  // The completed steps the members (not the joiners) offered, ascending.
  std::vector<std::int64_t> Offered() {
    std::lock_guard lock(mu_);
    std::vector<std::int64_t> sorted = offered_;
    std::sort(sorted.begin(), sorted.end());
    return sorted;
  }

 private:
  void CompleteIfReady() {
    if (asked_.empty()) return;
    for (int r : expected_) {
      if (!asked_.contains(r)) return;
    }
    Membership next;
    next.epoch = static_cast<std::int64_t>(answers_.size()) + 1;
    next.peers = peers_;
    std::int64_t fewest = -1;
    for (const auto& [rank, request] : asked_) {
      next.members.push_back(rank);
      if (request.completed_step >= 0 && (fewest < 0 || request.completed_step < fewest)) {
        fewest = request.completed_step;
        next.leader = rank;
      }
    }
    answers_.push_back(std::move(next));
    asked_.clear();
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::set<int> expected_;
  std::vector<dist::Endpoint> peers_;
  std::map<int, RegroupRequest> asked_;
  std::vector<Membership> answers_;
  std::vector<std::int64_t> offered_;
};

// Keeps the checkpoints' steps and each workers_active value.
class KeptRecords final : public RunRecorder {
 public:
  void RecordMetrics(std::span<const train::MetricPoint> points) override {
    for (const train::MetricPoint& p : points) {
      if (p.name == "workers_active") worlds.insert(static_cast<int>(p.value));
    }
  }
  Status SaveCheckpoint(const store::CheckpointView& checkpoint) override {
    checkpoints.push_back(checkpoint.step);
    return Status::Ok();
  }
  Status SaveBestModel(const store::BestModelInfo&, const store::CheckpointView&) override {
    return Status::Ok();
  }
  Status SaveClassReport(std::int64_t, const train::ClassReport&) override { return Status::Ok(); }
  std::set<int> worlds;
  std::vector<std::int64_t> checkpoints;
};

// How one replica's thread ended.
struct Outcome {
  Status status;
  std::int64_t step = -1;
  std::vector<float> params;
  KeptRecords records;
};

Outcome Finish(ElasticReplica& replica, const Result<train::StopReason>& why, KeptRecords records) {
  Outcome out{why.status(), -1, {}, std::move(records)};
  if (why.ok()) {
    train::Trainer& trainer = replica.session().trainer();
    out.step = trainer.position().step;
    out.params.assign(trainer.params().begin(), trainer.params().end());
  }
  return out;
}

// Set for this test's replicas (row_recorder.h).
struct RecordedRows {
  explicit RecordedRows(const std::string& prefix) {
    ::setenv("DTRAIN_RECORD_ROWS", prefix.c_str(), 1);
  }
  ~RecordedRows() { ::unsetenv("DTRAIN_RECORD_ROWS"); }
};

// Per (epoch, batch), per world: the rows each position took.
using StepRows =
    std::map<std::pair<int, int>, std::map<int, std::map<int, std::vector<std::uint32_t>>>>;

StepRows ReadRows(const std::string& prefix) {
  StepRows steps;
  for (int position = 0; position < kWorkers; ++position) {
    std::ifstream in(prefix + "." + std::to_string(position));
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      int epoch = -1, batch = -1, world = -1, at = -1;
      fields >> epoch >> batch >> world >> at;
      BOOST_TEST(at == position);
      std::vector<std::uint32_t>& rows = steps[{epoch, batch}][world][at];
      for (std::uint32_t row; fields >> row;) rows.push_back(row);
    }
  }
  return steps;
}

// What the run of the file's comment left to check beyond its own checks: the steps the members
// offered and the checkpoints' steps.
struct Regrouped {
  std::vector<std::int64_t> offered;
  std::vector<std::int64_t> checkpoints;
};

// The run of the file's comment, for `job`.
Regrouped SurvivorsRegroupAndAReplacementJoins(const config::JobConfig& job, const TempDir& dir) {
  Result<JobData> loaded = LoadJobData(job);
  BOOST_REQUIRE(loaded.ok());
  const JobData& data = loaded.value();
  const std::string prefix = dir.Path("rows");
  const RecordedRows recording(prefix);

  // Rank r listens on listeners[r]; the replacement for the victim on the last one.
  std::vector<dist::PeerListener> listeners;
  std::vector<dist::Endpoint> peers;
  for (int r = 0; r <= kWorkers; ++r) {
    Result<dist::PeerListener> opened = dist::PeerListener::Open("127.0.0.1");
    BOOST_REQUIRE(opened.ok());
    listeners.push_back(std::move(opened).value());
    listeners.back().RequireToken(kToken);
    if (r < kWorkers) peers.push_back({"127.0.0.1", listeners.back().port()});
  }
  const auto placement = [&](int rank, std::size_t listener) {
    Placement at;
    at.rank = rank;
    at.peers = peers;
    at.listener = &listeners[listener];
    at.data_token = kToken;
    return at;
  };
  TestCoordinator coordinator({0, 1, 2}, peers);
  const auto ask = [&](int rank) {
    return [&coordinator, rank](const RegroupRequest& r) { return coordinator.Ask(rank, r); };
  };

  std::atomic<bool> admitted{false};
  std::atomic<bool> told{false};  // rank 1's regroup notice
  std::vector<Outcome> outcomes(kWorkers);
  std::vector<std::jthread> threads;
  for (int rank : {0, 1}) {
    threads.emplace_back([&, rank] {
      ElasticReplica replica(job, data, placement(rank, static_cast<std::size_t>(rank)), ask(rank));
      if (Status began = replica.Begin(nullptr); !began.ok()) {
        outcomes[static_cast<std::size_t>(rank)].status = began;
        return;
      }
      KeptRecords records;
      RunOptions options;
      options.after_step = [&] {
        // Without the victim, the survivors train to kJoinStep, wait there for its replacement
        // (so that it joins before the run ends); rank 1, told of it, leaves the ring.
        if (replica.membership() != 1 || replica.session().trainer().position().step < kJoinStep) {
          return;
        }
        while (!admitted.load()) std::this_thread::sleep_for(1ms);
        if (rank == 1 && told.exchange(false)) replica.LeaveRing();
      };
      const Result<train::StopReason> why = replica.Train(job.checkpoint, records, options, -1);
      outcomes[static_cast<std::size_t>(rank)] = Finish(replica, why, std::move(records));
    });
  }
  Outcome left;  // the victim's: its failure, and the steps it completed
  std::jthread victim([&] {
    ElasticReplica replica(job, data, placement(kVictim, std::size_t{kVictim}), ask(kVictim));
    left.status = replica.Begin(nullptr);
    if (left.status.ok()) {
      KeptRecords records;
      RunOptions options;
      options.after_step = [&] {
        if (replica.session().trainer().position().step == kDeathStep) replica.LeaveRing();
      };
      const Result<train::StopReason> why =
          TrainRecorded(replica.session().trainer(), job.checkpoint, records, options, -1);
      left.status = why.ok() ? Status::Ok() : why.status();
      left.step = replica.session().trainer().position().step;
    }
    coordinator.Lose(kVictim);  // its process is gone
  });
  victim.join();
  // Having left its ring, its very next step failed (mode "local" too, between averages).
  BOOST_TEST(!left.status.ok());
  BOOST_TEST(left.step == kDeathStep);
  while (coordinator.Rounds() < 1) std::this_thread::sleep_for(1ms);
  coordinator.Admit(kVictim, {"127.0.0.1", listeners[kWorkers].port()});
  told = true;
  admitted = true;
  threads.emplace_back([&] {
    Placement at = placement(kVictim, std::size_t{kWorkers});
    at.peers[kVictim] = {"127.0.0.1", listeners[kWorkers].port()};
    ElasticReplica replica(job, data, std::move(at), ask(kVictim));
    if (Status joined = replica.Join(); !joined.ok()) {
      outcomes[kVictim].status = joined;
      return;
    }
    KeptRecords records;
    const Result<train::StopReason> why = replica.Train(job.checkpoint, records, {}, -1);
    outcomes[kVictim] = Finish(replica, why, std::move(records));
  });
  threads.clear();  // joins

  BOOST_TEST(coordinator.Rounds() == 2u);  // the loss, then the join
  for (int r = 0; r < kWorkers; ++r) {
    const Outcome& o = outcomes[static_cast<std::size_t>(r)];
    BOOST_TEST_CONTEXT("rank " << r) {
      BOOST_TEST_REQUIRE(o.status.ok(), o.status.message());
      BOOST_TEST(o.step == kSteps);
      BOOST_TEST_REQUIRE(o.params.size() == outcomes[0].params.size());
      BOOST_TEST(std::memcmp(o.params.data(), outcomes[0].params.data(),
                             o.params.size() * sizeof(float)) == 0);
    }
  }
  BOOST_TEST((outcomes[0].records.worlds == std::set<int>{2, 3}));
  BOOST_TEST(!outcomes[0].records.checkpoints.empty());  // position 0 writes them
  BOOST_TEST(outcomes[1].records.checkpoints.empty());

  // Each step, over every world that recorded it whole (a step whose exchange failed is recorded
  // by the world that took it and the one that redid it), took the global batch of 3 x 8 rows in
  // position order.
  data::BatchSampler global(kRows, kWorkers * kBatch, kSeed);
  const StepRows steps = ReadRows(prefix);
  std::set<int> worlds;
  for (int batch = 0; batch < kSteps; ++batch) {
    BOOST_TEST_CONTEXT("batch " << batch) {
      const auto step = steps.find({0, batch});
      BOOST_TEST_REQUIRE((step != steps.end()));
      const auto expected = global.Batch(0, static_cast<std::size_t>(batch));
      int whole = 0;
      for (const auto& [world, positions] : step->second) {
        if (static_cast<int>(positions.size()) != world) continue;  // a member died before it
        ++whole;
        worlds.insert(world);
        std::vector<std::uint32_t> joined;
        for (const auto& [position, rows] : positions) {
          joined.insert(joined.end(), rows.begin(), rows.end());
        }
        BOOST_TEST((joined == std::vector<std::uint32_t>(expected.begin(), expected.end())),
                   "world " << world);
      }
      BOOST_TEST(whole >= 1);
    }
  }
  BOOST_TEST((worlds == std::set<int>{2, 3}));
  return {coordinator.Offered(), outcomes[0].records.checkpoints};
}

BOOST_AUTO_TEST_SUITE(elastic_replica)

BOOST_AUTO_TEST_CASE(survivors_regroup_in_place_and_a_replacement_joins_bitwise_identical) {
  TempDir dir;
  const Regrouped r = SurvivorsRegroupAndAReplacementJoins(ElasticJob(dir), dir);
  // Each member offers its live state, the steps it completed.
  BOOST_TEST(r.offered == std::vector<std::int64_t>({kDeathStep, kDeathStep, kJoinStep, kJoinStep}),
             boost::test_tools::per_element());
}

// Local SGD: the victim leaves at step 10 (its step 11 fails) and the survivors' ring fails at the
// average after step 12; rank 1 leaves at step 25 (its step 26 fails) and rank 0's ring fails at
// the average after step 28. Each time the
// members offer the state of the average before (steps 8 and 24), not their own since.
BOOST_AUTO_TEST_CASE(in_mode_local_each_regroup_rolls_back_to_the_last_average) {
  TempDir dir;
  config::JobConfig job = ElasticJob(dir, "local");
  job.checkpoint.every_steps = 10;  // due between averages too
  const Regrouped r = SurvivorsRegroupAndAReplacementJoins(job, dir);
  BOOST_TEST(r.offered == std::vector<std::int64_t>({8, 8, 24, 24}),
             boost::test_tools::per_element());
  // Written right after averages only: the one due at step 10 at 12, then 20, 32, 40, 52, 60.
  BOOST_TEST(r.checkpoints == std::vector<std::int64_t>({12, 20, 32, 40, 52, 60}),
             boost::test_tools::per_element());
}

// Answers no ring can be made of fail the regroup, saying so, before it joins any: this rank left
// out, a leader outside the members, members out of order or unknown, a joiner as the leader; a
// first membership without this rank fails its begin.
BOOST_AUTO_TEST_CASE(a_membership_that_makes_no_ring_fails_the_regroup_or_the_begin) {
  TempDir dir;
  const config::JobConfig job = ElasticJob(dir);
  Result<JobData> loaded = LoadJobData(job);
  BOOST_REQUIRE(loaded.ok());
  Placement at;
  at.rank = 1;
  at.peers = std::vector<dist::Endpoint>(kWorkers, {"127.0.0.1", 1});
  const Membership bad[] = {{.epoch = 1, .members = {0, 2}, .leader = 0, .peers = {}},
                            {.epoch = 1, .members = {0, 1}, .leader = 2, .peers = {}},
                            {.epoch = 1, .members = {1, 0}, .leader = 0, .peers = {}},
                            {.epoch = 1, .members = {1, 1}, .leader = 1, .peers = {}},
                            {.epoch = 1, .members = {1, 7}, .leader = 1, .peers = {}},
                            {.epoch = 1, .members = {0, 1}, .leader = 1, .peers = {}}};
  for (const Membership& answer : bad) {
    ElasticReplica joiner(job, loaded.value(), at,
                          [&answer](const RegroupRequest& request) -> Result<Membership> {
                            BOOST_TEST(request.membership == -1);
                            BOOST_TEST(request.completed_step == -1);
                            return answer;
                          });
    const Status joined = joiner.Join();
    BOOST_TEST(!joined.ok());
    BOOST_TEST((joined.message().starts_with("regroup: rank 1 cannot train in membership [") ||
                joined.message() == "regroup: a joiner cannot lead"),
               joined.message());
  }
  // Nor does a replica begin in a first membership without it (a job started with fewer
  // replicas: its admission's "members").
  ElasticReplica left_out(job, loaded.value(), at, [](const RegroupRequest&) -> Result<Membership> {
    return Status::Error("no coordinator");
  });
  const Status began = left_out.Begin(nullptr, {0, 2});
  BOOST_TEST(began.message() == "rank 1 is not in its first membership [0, 2]");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace elastic_replica_test
}  // namespace dtrain::runner
