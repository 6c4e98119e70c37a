// Sparse models on parameter servers: keys spread evenly over the shards, a table cut into the
// shards' parts and joined back unchanged; one worker training through two shards (real shard
// threads, in-process links) ending with exactly the model single-process training gives, async
// or sync; two sync workers taking the steps of their batches together, and stopping together;
// async staleness within its bound.
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <map>
#include <thread>
#include <vector>

#include "core/data/click_synthetic.h"
#include "core/dist/local_link.h"
#include "core/dist/sparse_ps_client.h"
#include "core/dist/sparse_shard.h"
#include "core/sparse/key_shards.h"

namespace dtrain::sparse {
namespace sparse_ps_test {

using optim::OptimizerType;

train::TrainOptions Options() {
  train::TrainOptions o;
  o.epochs = 2;
  o.batch_size = 16;
  o.seed = 4;
  o.schedule.lr = 0.1f;
  return o;
}

// key -> (slot, each state vector's coordinates) of a state.
std::map<std::uint32_t, std::vector<float>> ByKey(const KeyTableState& s, std::size_t width) {
  std::map<std::uint32_t, std::vector<float>> out;
  for (std::size_t r = 0; r < s.keys.size(); ++r) {
    std::vector<float>& v = out[s.keys[r]];
    v.assign(s.slots.begin() + static_cast<std::ptrdiff_t>(r * width),
             s.slots.begin() + static_cast<std::ptrdiff_t>((r + 1) * width));
    for (const std::vector<float>& state : s.state) {
      v.insert(v.end(), state.begin() + static_cast<std::ptrdiff_t>(r * width),
               state.begin() + static_cast<std::ptrdiff_t>((r + 1) * width));
    }
  }
  return out;
}

BOOST_AUTO_TEST_SUITE(sparse_ps)

BOOST_AUTO_TEST_CASE(keys_spread_evenly_even_when_the_frequent_ones_are_small) {
  std::vector<int> per_shard(4, 0);
  for (std::uint32_t key = 0; key < 100000; ++key) ++per_shard[ShardOfKey(key, 4)];
  for (const int n : per_shard) BOOST_TEST(std::abs(n - 25000) < 600);
  // The keys a power-law click log touches, weighted by how often: still even.
  const data::ClickData clicks =
      data::MakeClicks({.rows = 5000, .features = 1u << 20, .nonzeros = 20, .seed = 1});
  std::vector<double> load(4, 0.0);
  for (const std::uint32_t key : clicks.rows.index) load[ShardOfKey(key, 4)] += 1.0;
  const double mean = static_cast<double>(clicks.rows.NonZeros()) / 4;
  for (const double l : load) BOOST_TEST(std::abs(l - mean) / mean < 0.2);
}

BOOST_AUTO_TEST_CASE(a_table_cut_into_parts_joins_back_unchanged) {
  const SparseModel fm({.type = SparseModelType::kFm, .factors = 2});
  KeyTable table(fm, {.type = OptimizerType::kFtrl}, 2);
  std::vector<std::uint32_t> keys(50);
  for (std::uint32_t i = 0; i < 50; ++i) keys[i] = i * 7919;
  std::vector<float> slots(keys.size() * 3), grads(slots.size(), 0.3f), global_grad{0.5f};
  table.Pull(keys, slots.data());
  table.Push(keys, grads.data(), global_grad.data(), 0.1f);
  const KeyTableState whole = table.Snapshot();
  const KeyTable empty(fm, {.type = OptimizerType::kFtrl}, 2);
  std::vector<KeyTableState> parts;
  for (int k = 0; k < 3; ++k) parts.push_back(ShardPart(whole, k, 3, 3, empty.Snapshot()));
  BOOST_TEST(parts[1].globals == empty.Snapshot().globals);
  const KeyTableState joined = JoinShardParts(parts, 3, 1);
  BOOST_TEST((ByKey(joined, 3) == ByKey(whole, 3)));
  BOOST_TEST(joined.globals == whole.globals);
  BOOST_TEST(joined.state.back().back() == whole.state.back().back());  // the global's n
}

// Records every metric (summed over the run) and may stop the loop after a given step.
class Recording : public SparseListener {
 public:
  void Record(std::span<const train::MetricPoint> points) override {
    for (const auto& p : points) values[p.name] += p.value;
  }
  bool AfterStep(const SparseTrainer& trainer) override {
    if (step_delay.count() > 0) std::this_thread::sleep_for(step_delay);
    return stop_after == 0 || trainer.position().step < stop_after;
  }
  std::map<std::string, double> values;
  std::int64_t stop_after = 0;  // 0: never
  std::chrono::microseconds step_delay{0};
};

// A sparse job's workers (threads, each a SparseTrainer of its share of the rows) on its shards
// (threads, real SparseShards), over in-process links.
struct ClusterSetup {
  int workers = 1;
  int shards = 2;
  dist::PsMode mode = dist::PsMode::kAsync;
  int max_staleness = 0;
};
struct ClusterRun {
  std::vector<Result<train::StopReason>> why;
  std::vector<std::int64_t> steps;        // per worker
  std::vector<Recording> listeners;       // per worker, as set before the run
  std::vector<train::CommStats> traffic;  // per worker, from hello to the end of training
  Result<KeyTableState> state = Status::Error("not run");
  std::uint64_t keys = 0;  // as worker 0's client counts them
  std::vector<dist::SparseShardStats> shard_stats;
};

ClusterRun RunCluster(const SparseModel& model, const optim::OptimizerOptions& optimizer,
                      const data::SparseRows& rows, const ClusterSetup& setup,
                      std::vector<Recording> listeners) {
  const auto workers = static_cast<std::size_t>(setup.workers);
  const auto shards = static_cast<std::size_t>(setup.shards);
  std::vector<std::vector<dist::LocalLinkPair>> pairs(workers);  // [worker][shard]
  for (auto& row : pairs) {
    for (std::size_t k = 0; k < shards; ++k) row.push_back(dist::MakeLocalLinkPair("w", "s"));
  }
  std::vector<std::unique_ptr<dist::SparseShard>> servers;
  std::vector<std::jthread> serving;
  for (std::size_t k = 0; k < shards; ++k) {
    servers.push_back(std::make_unique<dist::SparseShard>(
        dist::SparseShardOptions{.shard = static_cast<int>(k),
                                 .shards = setup.shards,
                                 .workers = setup.workers,
                                 .mode = setup.mode,
                                 .max_staleness = setup.max_staleness,
                                 .model = model.spec(),
                                 .optimizer = optimizer,
                                 .seed = 9}));
    serving.emplace_back([&, k] {
      std::vector<dist::Link*> links;
      for (auto& row : pairs) links.push_back(row[k].b.get());
      const Status served = servers[k]->Serve(links);
      BOOST_CHECK_MESSAGE(served.ok(), served.message());
    });
  }
  std::vector<std::unique_ptr<dist::SparseShardClient>> clients;
  for (std::size_t w = 0; w < workers; ++w) {
    std::vector<dist::Link*> links;
    for (auto& pair : pairs[w]) links.push_back(pair.a.get());
    clients.push_back(std::make_unique<dist::SparseShardClient>(
        links,
        dist::SparseClientOptions{.rank = static_cast<int>(w),
                                  .workers = setup.workers,
                                  .mode = setup.mode,
                                  .max_staleness = setup.max_staleness},
        model));
  }
  ClusterRun run;
  run.listeners = std::move(listeners);
  run.listeners.resize(workers);
  run.why.assign(workers, Status::Error("not run"));
  run.steps.assign(workers, 0);
  run.traffic.resize(workers);
  {
    std::vector<std::jthread> training;
    for (std::size_t w = 0; w < workers; ++w) {
      training.emplace_back([&, w] {
        if (Status hello = clients[w]->Hello(); !hello.ok()) {
          run.why[w] = hello;
          return;
        }
        const train::CommStats greeted = clients[w]->Stats();
        train::TrainOptions options = Options();
        options.rank = static_cast<int>(w);
        options.world_size = setup.workers;
        SparseTrainer trainer(model, options, rows, nullptr, *clients[w]);
        run.why[w] = trainer.Run(run.listeners[w]);
        run.steps[w] = trainer.position().step;
        const train::CommStats trained = clients[w]->Stats();
        run.traffic[w] = {.bytes_sent = trained.bytes_sent - greeted.bytes_sent,
                          .bytes_received = trained.bytes_received - greeted.bytes_received};
      });
    }
  }
  run.state = clients[0]->Snapshot();
  run.keys = clients[0]->KeyCount();
  for (auto& client : clients) BOOST_CHECK(client->Goodbye().ok());
  serving.clear();
  for (const auto& server : servers) run.shard_stats.push_back(server->Stats());
  return run;
}

void RequireTrained(const ClusterRun& run) {
  for (const auto& why : run.why) BOOST_REQUIRE_MESSAGE(why.ok(), why.status().message());
  BOOST_REQUIRE_MESSAGE(run.state.ok(), run.state.status().message());
}

const optim::OptimizerOptions kAdagrad{.type = OptimizerType::kAdagrad,
                                       .initial_accumulator = 0.1f};

// The model one process trains on `rows` (Options(), kAdagrad, seed 9).
KeyTableState TrainAlone(const SparseModel& model, const data::SparseRows& rows) {
  KeyTable table(model, kAdagrad, 9);
  LocalSparseParameters local(table);
  SparseTrainer alone(model, Options(), rows, nullptr, local);
  Recording none;
  BOOST_REQUIRE(alone.Run(none).ok());
  return table.Snapshot();
}

BOOST_AUTO_TEST_CASE(one_worker_on_two_shards_trains_what_one_process_trains) {
  const data::ClickData clicks =
      data::MakeClicks({.rows = 600, .features = 3000, .nonzeros = 8, .seed = 6});
  const SparseModel fm({.type = SparseModelType::kFm, .factors = 3});
  const KeyTableState expected = TrainAlone(fm, clicks.rows);
  for (const dist::PsMode mode : {dist::PsMode::kAsync, dist::PsMode::kSync}) {
    BOOST_TEST_CONTEXT("mode " << dist::PsModeName(mode)) {
      const ClusterRun run = RunCluster(fm, kAdagrad, clicks.rows, {.mode = mode}, {});
      RequireTrained(run);
      // Bitwise: the same steps (sync's combining of one worker's push changes no bit).
      BOOST_TEST((ByKey(run.state.value(), 4) == ByKey(expected, 4)));
      BOOST_TEST(run.state.value().globals == expected.globals);
      BOOST_TEST(run.keys == expected.keys.size());
      BOOST_TEST(run.shard_stats[0].keys + run.shard_stats[1].keys == expected.keys.size());
      BOOST_TEST(run.shard_stats[0].pushes_applied == static_cast<std::uint64_t>(run.steps[0]));
      BOOST_TEST(run.shard_stats[0].staleness.max == 0u);
      // The measured traffic of the run is what the metrics say, and it is the keys' slots (4
      // bytes a float) and the headers (`header` bytes; each shard's pull reply also carries the 1
      // global), nothing of the feature space. One metrics window covers the run (fewer steps
      // than log_every).
      const std::map<std::string, double>& metrics = run.listeners[0].values;
      const double steps = static_cast<double>(run.steps[0]);
      BOOST_REQUIRE(steps < Options().log_every);
      const double keys = metrics.at("keys_per_step") * steps;  // pulled over the run
      BOOST_TEST(metrics.at("bytes_sent") == static_cast<double>(run.traffic[0].bytes_sent));
      BOOST_TEST(metrics.at("bytes_received") ==
                 static_cast<double>(run.traffic[0].bytes_received));
      // Received: each step's pull replies (2 headers, the keys' slots, 1 global each) and, in
      // sync mode, the push's answers (2 headers).
      const double header = dist::kPsHeaderFloats * sizeof(float);
      const double answers = mode == dist::PsMode::kSync ? 2 * header : 0;
      BOOST_TEST(
          metrics.at("bytes_received") == steps * (2 * (header + 4) + answers) + keys * 4 * 4,
          boost::test_tools::tolerance(1e-9));
      // Sent: each step's pull (2 headers, the keys) and push (2 headers, keys, 4-float
      // gradients, shard 0 the global's).
      BOOST_TEST(metrics.at("bytes_sent") == steps * (4 * header + 4) + keys * (4 + 4 + 16),
                 boost::test_tools::tolerance(1e-9));
    }
  }
}

// Sync with two workers of batch b: each step is one step on the mean gradient of both workers'
// batches — what one process of batch 2 b computes on the same rows — the same bits every run.
BOOST_AUTO_TEST_CASE(two_sync_workers_take_the_step_of_their_batches_together) {
  const data::ClickData clicks =
      data::MakeClicks({.rows = 600, .features = 3000, .nonzeros = 8, .seed = 6});
  const SparseModel fm({.type = SparseModelType::kFm, .factors = 3});
  const ClusterSetup sync{.workers = 2, .shards = 2, .mode = dist::PsMode::kSync};
  const ClusterRun run = RunCluster(fm, kAdagrad, clicks.rows, sync, {});
  RequireTrained(run);
  BOOST_TEST(run.steps[0] == run.steps[1]);
  BOOST_TEST(run.shard_stats[0].global_clock == static_cast<std::uint64_t>(run.steps[0]));
  BOOST_TEST(run.shard_stats[1].pushes_applied == 2 * static_cast<std::uint64_t>(run.steps[0]));

  // The reference: one process with batches of both workers' rows (kGlobalBatches: the same
  // rows, rank 0's first).
  train::TrainOptions together = Options();
  together.batch_size = 2 * Options().batch_size;
  KeyTable table(fm, kAdagrad, 9);
  LocalSparseParameters local(table);
  SparseTrainer alone(fm, together, clicks.rows, nullptr, local);
  Recording none;
  BOOST_REQUIRE(alone.Run(none).ok());
  BOOST_TEST(alone.position().step == run.steps[0]);
  const auto expected = ByKey(table.Snapshot(), 4);
  const auto got = ByKey(run.state.value(), 4);
  BOOST_REQUIRE(got.size() == expected.size());
  for (const auto& [key, values] : expected) {
    BOOST_TEST_CONTEXT("key " << key) {
      BOOST_TEST(got.at(key) == values, boost::test_tools::tolerance(2e-4f)
                                            << boost::test_tools::per_element());
    }
  }
  BOOST_TEST(run.state.value().globals == table.Snapshot().globals,
             boost::test_tools::tolerance(2e-4f) << boost::test_tools::per_element());

  const ClusterRun again = RunCluster(fm, kAdagrad, clicks.rows, sync, {});
  RequireTrained(again);
  BOOST_TEST((ByKey(again.state.value(), 4) == got));
}

// A stop one sync worker asks for is agreed: both stop after the same step, for that reason.
BOOST_AUTO_TEST_CASE(sync_workers_stop_together_when_one_asks) {
  const data::ClickData clicks =
      data::MakeClicks({.rows = 600, .features = 3000, .nonzeros = 8, .seed = 6});
  const SparseModel logistic({.type = SparseModelType::kLogistic});
  std::vector<Recording> listeners(2);
  listeners[1].stop_after = 5;
  const ClusterRun run =
      RunCluster(logistic, kAdagrad, clicks.rows,
                 {.workers = 2, .shards = 2, .mode = dist::PsMode::kSync}, std::move(listeners));
  RequireTrained(run);
  for (int w = 0; w < 2; ++w) {
    BOOST_TEST((run.why[w].value() == train::StopReason::kRequested));
    BOOST_TEST(run.steps[w] == 6);  // proposed after step 5, carried by step 6's push
  }
}

// Async with max_staleness s: a fast worker waits for a slow one, so no applied push was computed
// more than s of its clocks behind the slowest worker's.
BOOST_AUTO_TEST_CASE(async_staleness_stays_within_the_bound) {
  const data::ClickData clicks =
      data::MakeClicks({.rows = 600, .features = 3000, .nonzeros = 8, .seed = 6});
  const SparseModel logistic({.type = SparseModelType::kLogistic});
  for (const int s : {1, 3}) {
    BOOST_TEST_CONTEXT("max_staleness " << s) {
      std::vector<Recording> listeners(2);
      listeners[0].step_delay = std::chrono::milliseconds(2);  // rank 0 is slow
      const ClusterRun run =
          RunCluster(logistic, kAdagrad, clicks.rows,
                     {.workers = 2, .shards = 2, .max_staleness = s}, std::move(listeners));
      RequireTrained(run);
      for (const dist::SparseShardStats& st : run.shard_stats) {
        BOOST_TEST(st.pushes_applied == static_cast<std::uint64_t>(run.steps[0] + run.steps[1]));
        BOOST_TEST(st.staleness.pushes == st.pushes_applied);
        BOOST_TEST(st.staleness.max <= static_cast<std::uint64_t>(s));
        BOOST_TEST(st.global_clock == static_cast<std::uint64_t>(run.steps[0]));
      }
    }
  }
}

// A header that claims more keys than a request may carry closes that worker's conversation
// with an error naming the count, before anything is allocated from it.
BOOST_AUTO_TEST_CASE(a_request_claiming_too_many_keys_is_refused) {
  const SparseModel logistic({.type = SparseModelType::kLogistic});
  dist::LocalLinkPair pair = dist::MakeLocalLinkPair("worker", "shard");
  dist::SparseShard shard(
      {.shard = 0, .shards = 1, .workers = 1, .model = logistic.spec(), .optimizer = {}});
  dist::PsHeader pull;
  pull.rows = 1u << 30;
  std::vector<float> raw(dist::kPsHeaderFloats);
  dist::EncodePsHeader(pull, std::span<float, dist::kPsHeaderFloats>(raw));
  BOOST_REQUIRE(pair.a
                    ->Send(dist::SparseRequestTag(dist::SparseMessage::kPull), raw,
                           dist::Clock::now() + std::chrono::seconds(5))
                    .ok());
  dist::Link* link = pair.b.get();
  const Status served = shard.Serve({&link, 1});
  BOOST_TEST(!served.ok());
  BOOST_TEST(served.message().find("1073741824 keys") != std::string::npos, served.message());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace sparse_ps_test
}  // namespace dtrain::sparse
