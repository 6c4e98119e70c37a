// Sparse models on parameter servers: keys spread evenly over the shards, a table cut into the
// shards' parts and joined back unchanged, and one worker training through two shards (real
// shard threads, in-process links) ending with exactly the model single-process training gives.
#include <boost/test/unit_test.hpp>
#include <map>
#include <thread>
#include <vector>

#include "core/data/click_synthetic.h"
#include "core/dist/local_link.h"
#include "core/dist/sparse_ps_client.h"
#include "core/dist/sparse_shard.h"
#include "core/sparse/key_shards.h"

namespace dtrain::sparse {
namespace {

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

BOOST_AUTO_TEST_CASE(one_worker_on_two_shards_trains_what_one_process_trains) {
  const data::ClickData clicks =
      data::MakeClicks({.rows = 600, .features = 3000, .nonzeros = 8, .seed = 6});
  const SparseModel fm({.type = SparseModelType::kFm, .factors = 3});
  const optim::OptimizerOptions adagrad{.type = OptimizerType::kAdagrad,
                                        .initial_accumulator = 0.1f};
  KeyTable table(fm, adagrad, 9);
  LocalSparseParameters local(table);
  SparseTrainer alone(fm, Options(), clicks.rows, nullptr, local);
  class : public SparseListener {
    void Record(std::span<const train::MetricPoint>) override {}
    bool AfterStep(const SparseTrainer&) override { return true; }
  } none;
  BOOST_REQUIRE(alone.Run(none).ok());

  std::vector<dist::LocalLinkPair> pairs;
  for (int k = 0; k < 2; ++k) pairs.push_back(dist::MakeLocalLinkPair("worker", "shard"));
  std::vector<std::unique_ptr<dist::SparseShard>> shards;
  std::vector<std::jthread> serving;
  for (int k = 0; k < 2; ++k) {
    shards.push_back(
        std::make_unique<dist::SparseShard>(dist::SparseShardOptions{.shard = k,
                                                                     .shards = 2,
                                                                     .workers = 1,
                                                                     .model = fm.spec(),
                                                                     .optimizer = adagrad,
                                                                     .seed = 9}));
    serving.emplace_back([&, k] {
      dist::Link* link = pairs[static_cast<std::size_t>(k)].b.get();
      BOOST_CHECK(shards[static_cast<std::size_t>(k)]->Serve({&link, 1}).ok());
    });
  }
  std::vector<dist::Link*> links{pairs[0].a.get(), pairs[1].a.get()};
  dist::SparseShardClient client(links, {.rank = 0, .workers = 1}, fm);
  BOOST_REQUIRE(client.Hello().ok());
  const train::CommStats greeted = client.Stats();
  SparseTrainer remote(fm, Options(), clicks.rows, nullptr, client);
  class : public SparseListener {
   public:
    void Record(std::span<const train::MetricPoint> points) override {
      for (const auto& p : points) values[p.name] += p.value;
    }
    bool AfterStep(const SparseTrainer&) override { return true; }
    std::map<std::string, double> values;  // each metric summed over the run
  } metrics;
  BOOST_REQUIRE(remote.Run(metrics).ok());
  const train::CommStats trained = client.Stats();
  Result<KeyTableState> snapshot = client.Snapshot();
  BOOST_REQUIRE_MESSAGE(snapshot.ok(), snapshot.status().message());
  BOOST_TEST(client.KeyCount() == table.size());
  BOOST_REQUIRE(client.Goodbye().ok());
  serving.clear();

  const KeyTableState expected = table.Snapshot();
  BOOST_TEST((ByKey(snapshot.value(), 4) == ByKey(expected, 4)));  // bitwise: the same steps
  BOOST_TEST(snapshot.value().globals == expected.globals);
  BOOST_TEST(shards[0]->Stats().keys + shards[1]->Stats().keys == table.size());
  BOOST_TEST(shards[0]->Stats().pushes_applied ==
             static_cast<std::uint64_t>(alone.position().step));
  // The measured traffic of the run is what the metrics say, and it is the keys' slots (4 bytes a
  // float) and the headers (100 bytes; each shard's pull reply also carries the 1 global), nothing
  // of the feature space. One metrics window covers the run (fewer steps than log_every).
  const double steps = static_cast<double>(remote.position().step);
  BOOST_REQUIRE(steps < Options().log_every);
  const double keys = metrics.values.at("keys_per_step") * steps;  // pulled over the run
  BOOST_TEST(metrics.values.at("bytes_sent") ==
             static_cast<double>(trained.bytes_sent - greeted.bytes_sent));
  BOOST_TEST(metrics.values.at("bytes_received") ==
             static_cast<double>(trained.bytes_received - greeted.bytes_received));
  BOOST_TEST(metrics.values.at("bytes_received") == steps * 2 * (100 + 4) + keys * 4 * 4,
             boost::test_tools::tolerance(1e-9));
  // Sent: each step's pull (2 headers, the keys) and push (2 headers, keys, 4-float gradients,
  // shard 0 the global's).
  BOOST_TEST(metrics.values.at("bytes_sent") == steps * (4 * 100 + 4) + keys * (4 + 4 + 16),
             boost::test_tools::tolerance(1e-9));
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

}  // namespace
}  // namespace dtrain::sparse
