// The sweep standings' cache (daemon/server/standing_cache.h) with a real store: ReadStandings
// reads an ended trial's job once and reuses its standing until the job's row changes; a
// promoted (re-queued) trial is read again, its rung's train.steps kept for the next reads; the
// cache holds at most kSweeps sweeps, the least recently read dropped first.
#include "daemon/server/standing_cache.h"

#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "config/job_file.h"
#include "config/sweep_asha.h"
#include "config/sweep_file.h"
#include "daemon/server/sweep_standing.h"
#include "daemon/store/store_test_util.h"

namespace dtrain::server {
namespace standing_cache_test {

using store::testing::OpenStore;
using store::testing::TempStoreDir;

// ASHA over rungs of 4, 12 and 36 steps.
constexpr const char* kAshaSweep = R"(name = "a"
[data]
format = "synthetic"
rows = 100
features = 4
classes = 2
[model]
type = "softmax"
[train]
steps = 12
epochs = 0
[sweep]
method = "asha"
metric = "eval_loss"
goal = "min"
max_trials = 3
seed = 1
min_steps = 4
max_steps = 36
reduction_factor = 3
max_concurrent = 1
[sweep.parameters]
"optimizer.lr" = { log_uniform = [0.001, 0.5] }
)";

BOOST_AUTO_TEST_SUITE(standing_cache)

BOOST_AUTO_TEST_CASE(an_ended_trial_is_read_once_and_again_when_its_job_is_promoted) {
  TempStoreDir dir;
  const std::unique_ptr<store::Store> s = OpenStore(dir.Path("s.db"));
  const config::SweepLoadResult loaded =
      config::ParseSweepText(kAshaSweep, "a.toml", "/", {config::DataFiles::kUnchecked});
  BOOST_REQUIRE(loaded.ok());
  store::SweepRecord record;
  record.name = "a";
  record.method = "asha";
  record.metric = "eval_loss";
  record.goal = "min";
  record.trials = 3;
  record.max_concurrent = 1;
  const std::int64_t id = s->CreateSweep(record).value();
  const store::SweepRecord sweep = s->GetSweep(id).value();
  store::JobRecord trial;
  trial.name = "a";
  trial.spec_toml = config::FormatResolvedJob(loaded.trials[0].job);  // train.steps = 4
  const std::int64_t job = s->CreateTrialJob({id, 0, std::nullopt, "[]"}, trial).value();
  BOOST_REQUIRE(s->SetJobState(job, store::JobState::kStarting, "starting").ok());
  BOOST_REQUIRE(s->SetJobState(job, store::JobState::kRunning, "running").ok());
  s->AppendMetrics(job, 0, std::vector<train::MetricPoint>{{4, 0.0, "eval_loss", 0.5}});
  BOOST_REQUIRE(s->Flush().ok());
  BOOST_REQUIRE(s->SetJobState(job, store::JobState::kSucceeded, "completed").ok());

  TrialStandingCache cache;
  const auto read = [&] {
    Result<std::vector<TrialStanding>> standings =
        ReadStandings(*s, sweep, &loaded, s->SweepTrials(id).value(), &cache);
    BOOST_REQUIRE(standings.ok());
    BOOST_REQUIRE(standings.value().size() == 1u);
    return standings.value()[0];
  };
  TrialStanding standing = read();
  BOOST_TEST(standing.state == "succeeded");
  BOOST_TEST(standing.rung == 0);
  BOOST_TEST(!standing.asha.ended);  // at its rung: promotable
  BOOST_REQUIRE(cache.Find(id)->count(job) == 1u);
  // A standing made up for the cache shows that the next read takes it from there ...
  TrialStandingCache::Entries entries = *cache.Find(id);
  entries.at(job).ended->reason = "from the cache";
  cache.Keep(id, entries);
  BOOST_TEST(read().reason == "from the cache");
  BOOST_TEST(read().reason == "from the cache");

  // ... until the job changes: promoted to rung 1, re-queued with train.steps = 12.
  config::JobConfig promoted = loaded.trials[0].job;
  promoted.train.steps = 12;
  const std::string reason = config::AshaPromotedReason(1, 12);
  BOOST_REQUIRE(
      s->RequeueJob(job, reason, config::FormatResolvedJob(promoted), "train.steps = 12").ok());
  standing = read();
  BOOST_TEST(standing.state == "queued");
  BOOST_TEST(standing.reason == reason);
  BOOST_TEST(standing.running);
  BOOST_TEST(standing.asha.running);
  BOOST_TEST(standing.rung == 0);
  const CachedStanding& queued = cache.Find(id)->at(job);
  BOOST_TEST(!queued.ended.has_value());  // running: read again each time
  BOOST_TEST(queued.target == 12);        // its file not parsed again while its row stays

  // Its end is read too: trained to rung 1.
  BOOST_REQUIRE(s->SetJobState(job, store::JobState::kStarting, "starting").ok());
  BOOST_REQUIRE(s->SetJobState(job, store::JobState::kRunning, "running").ok());
  s->AppendMetrics(job, 0, std::vector<train::MetricPoint>{{12, 0.0, "eval_loss", 0.25}});
  BOOST_REQUIRE(s->Flush().ok());
  BOOST_REQUIRE(s->SetJobState(job, store::JobState::kSucceeded, "completed").ok());
  standing = read();
  BOOST_TEST(standing.state == "succeeded");
  BOOST_TEST(standing.rung == 1);
  BOOST_TEST(*standing.metric == 0.25);
  BOOST_TEST(cache.Find(id)->at(job).ended.has_value());
}

BOOST_AUTO_TEST_CASE(the_cache_keeps_the_most_recently_read_sweeps) {
  TrialStandingCache cache;
  TrialStandingCache::Entries one;
  one[7].updated = 1.0;
  for (std::int64_t sweep = 1; sweep <= static_cast<std::int64_t>(TrialStandingCache::kSweeps);
       ++sweep) {
    cache.Keep(sweep, one);
  }
  cache.Keep(1, one);  // read again: now the most recent
  cache.Keep(100, one);
  BOOST_TEST(cache.Find(1)->size() == 1u);
  BOOST_TEST(cache.Find(2)->empty());  // the least recently read went
  BOOST_TEST(cache.Find(3)->size() == 1u);
  BOOST_TEST(cache.Find(100)->size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace standing_cache_test
}  // namespace dtrain::server
