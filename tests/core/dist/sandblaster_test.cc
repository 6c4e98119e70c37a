// Sandblaster L-BFGS with its processes as threads over in-process links: a coordinator driving
// L-BFGS on vectors sharded over 1-3 shards, 1-4 workers computing work units. It must reach the
// optimum the single-process L-BFGS and Newton's method reach; a slow worker's units go to the
// others through backups; a worker that dies mid-run has its units done by the rest.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "common/exact_optimum.h"
#include "common/gaussian_blobs.h"
#include "core/dist/local_link.h"
#include "core/dist/sharded_vectors.h"
#include "core/dist/sandblaster_worker.h"
#include "core/dist/shard_ranges.h"
#include "core/dist/vector_shard.h"
#include "core/dist/work_dispatch.h"
#include "core/math/gemm.h"
#include "core/optim/vector_slices.h"
#include "core/train/batch_objective.h"

namespace dtrain::dist {
namespace sandblaster_test {

using namespace std::chrono_literals;

using dtrain::testing::GaussianBlobs;

model::ModelSpec Spec(int inputs, int classes) {
  model::ModelSpec s;
  s.type = classes == 2 ? model::ModelType::kLogistic : model::ModelType::kSoftmax;
  s.inputs = inputs;
  s.outputs = classes == 2 ? 1 : classes;
  s.loss = model::DefaultLoss(s.type, s.outputs);
  return s;
}

std::vector<std::pair<std::size_t, std::size_t>> Weights(const model::Model& m) {
  std::vector<std::pair<std::size_t, std::size_t>> w;
  for (const model::LayerView& l : m.layers()) {
    w.emplace_back(l.weight_offset, l.weight_offset + static_cast<std::size_t>(l.in) * l.out);
  }
  return w;
}

optim::LbfgsOptions Options() {
  optim::LbfgsOptions o;
  o.history = 6;
  o.max_iterations = 300;
  o.gradient_tolerance = 1e-6;
  o.loss_tolerance = 1e-12;
  return o;
}

struct Problem {
  data::Dataset set;
  model::Model model;
  data::Scaling scaling = data::ConstantScaling(1.0f);
  float wd = 0.01f;
  Problem(int classes, std::uint32_t seed)
      : set(GaussianBlobs(800, 5, classes, seed)), model(Spec(5, classes)) {}
  std::vector<std::uint32_t> Rows() const { return train::ObjectiveRows(set.rows, 0, 1); }
};

struct Outcome {
  double loss = 0.0;
  std::int64_t iterations = 0;
  optim::LbfgsStop stop = optim::LbfgsStop::kNone;
};

Outcome Drive(optim::Lbfgs& lbfgs) {
  Outcome o;
  while (true) {
    Result<optim::LbfgsIteration> it = lbfgs.Iterate();
    BOOST_REQUIRE_MESSAGE(it.ok(), it.status().message());
    if (it.value().stop != optim::LbfgsStop::kNone) {
      o.stop = it.value().stop;
      break;
    }
  }
  o.loss = lbfgs.state().loss;
  o.iterations = lbfgs.state().iteration;
  return o;
}

Outcome Single(Problem& p) {
  train::BatchObjective objective(p.model, p.set, p.scaling, p.Rows(), p.wd, 64);
  optim::LocalVectors v(optim::LbfgsVectorCount(Options().history), p.model.NumParams(),
                        [&](std::span<const float> x, std::span<float> g) -> Result<double> {
                          return objective.Evaluate(x, g);
                        });
  p.model.Init(v.slices()[optim::kX], 1);
  optim::Lbfgs lbfgs(Options(), v);
  BOOST_REQUIRE(lbfgs.Start().ok());
  return Drive(lbfgs);
}

struct ClusterRun {
  Outcome outcome;
  PassTotals last_pass;
  std::vector<int> units_per_worker;  // over the whole run
  int backups_won = 0;
  std::vector<std::string> lost;
};

// Shards, workers and the coordinator as threads. `slow` (if >= 0) sleeps `delay` in each of its
// units; `dies` (if >= 0) closes its links in its `die_at`-th unit.
ClusterRun Sandblast(Problem& p, int workers, int shards, int units, double backup_after,
                     int slow = -1, std::chrono::milliseconds delay = 0ms, int dies = -1,
                     int die_at = 0) {
  const std::size_t n = p.model.NumParams();
  const int count = optim::LbfgsVectorCount(Options().history);
  std::vector<LocalLinkPair> to_shard, to_worker;             // coordinator's
  std::vector<std::vector<LocalLinkPair>> worker_shard(workers);  // [w][s]
  // a: the coordinator's end (or the worker's, to a shard); x.a->peer() is the second name.
  for (int s = 0; s < shards; ++s) {
    to_shard.push_back(MakeLocalLinkPair("coordinator", "shard " + std::to_string(s)));
  }
  for (int w = 0; w < workers; ++w) {
    to_worker.push_back(MakeLocalLinkPair("coordinator", "worker rank " + std::to_string(w)));
    for (int s = 0; s < shards; ++s) {
      worker_shard[w].push_back(MakeLocalLinkPair("worker rank " + std::to_string(w),
                                                   "shard " + std::to_string(s)));
    }
  }
  const std::vector<ShardRange> ranges = ShardRanges(n, shards);
  std::vector<std::jthread> threads;
  for (int s = 0; s < shards; ++s) {
    threads.emplace_back([&, s] {
      VectorShard shard({.shard = s, .shards = shards, .begin = ranges[s].begin,
                         .end = ranges[s].end, .vectors = count, .weights = Weights(p.model),
                         .timeout = 10s});
      std::vector<Link*> links;
      for (int w = 0; w < workers; ++w) links.push_back(worker_shard[w][s].b.get());
      Status served = shard.Serve(*to_shard[s].b, links);
      BOOST_TEST(served.ok(), served.message());
    });
  }
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      train::BatchObjective objective(p.model, p.set, p.scaling, p.Rows(), p.wd, 64);
      std::vector<Link*> links;
      for (int s = 0; s < shards; ++s) links.push_back(worker_shard[w][s].a.get());
      int done = 0;
      const UnitFunction unit = [&](std::span<const float> x, std::size_t first, std::size_t last,
                                    std::span<float> g) {
        if (w == slow) std::this_thread::sleep_for(delay);
        if (w == dies && ++done == die_at) {
          to_worker[w].b->Close();
          for (Link* l : links) l->Close();
        }
        return objective.AccumulateRows(x, first, last, g);
      };
      Status ran = RunSandblasterWorker(*to_worker[w].b, links,
                                        {.rank = w, .num_params = n, .timeout = 10s}, unit);
      if (w != dies) BOOST_TEST(ran.ok(), "worker " << w << ": " << ran.message());
      // As a process's exit would: its links close.
      to_worker[w].b->Close();
      for (Link* l : links) l->Close();
    });
  }
  ClusterRun run;
  run.units_per_worker.assign(static_cast<std::size_t>(workers), 0);
  // However the coordinator's part ends (a failed check too), its shard links close, so that the
  // shards' threads end rather than wait for a goodbye.
  struct CloseShards {
    std::vector<LocalLinkPair>& links;
    ~CloseShards() {
      for (auto& l : links) l.a->Close();
    }
  } close_shards{to_shard};
  {
    std::vector<Link*> shard_links, worker_links;
    for (auto& l : to_shard) shard_links.push_back(l.a.get());
    for (auto& l : to_worker) worker_links.push_back(l.a.get());
    WorkDispatcher dispatcher(worker_links, {.units = units, .backup_after = backup_after,
                                             .rows = p.set.rows, .timeout = 10s});
    ShardedVectors vectors(shard_links, n, {.rows = p.set.rows, .weight_decay = p.wd, .timeout = 10s},
                           [&](std::uint64_t pass) -> Result<PassTotals> {
                             Result<PassTotals> t = dispatcher.RunPass(pass);
                             if (t.ok()) {
                               for (int w = 0; w < workers; ++w) {
                                 run.units_per_worker[w] += t.value().units_per_worker[w];
                               }
                               run.backups_won += t.value().backups_won;
                             }
                             return t;
                           });
    math::FloatBuffer init(n);
    p.model.Init(init, 1);
    BOOST_REQUIRE(vectors.Load(optim::kX, init).ok());
    optim::Lbfgs lbfgs(Options(), vectors);
    BOOST_REQUIRE(lbfgs.Start().ok());
    run.outcome = Drive(lbfgs);
    run.last_pass = vectors.last_pass();
    math::FloatBuffer x(n);
    BOOST_REQUIRE(vectors.Gather(optim::kX, x).ok());
    BOOST_REQUIRE(dispatcher.Stop().ok());
    run.lost = dispatcher.TakeLost();
    BOOST_REQUIRE(vectors.Goodbye().ok());
  }
  threads.clear();
  return run;
}

struct Fixture {
  Fixture() { math::SetBlasThreads(1); }
};

BOOST_FIXTURE_TEST_SUITE(sandblaster, Fixture)

BOOST_AUTO_TEST_CASE(reaches_the_single_process_and_exact_optimum_with_any_workers_and_shards) {
  for (const int classes : {2, 3}) {
    Problem p(classes, 5 + classes);
    const Outcome single = Single(p);
    const dtrain::testing::Optimum exact = dtrain::testing::ExactOptimum(
        p.set.rows, p.set.features, std::vector<float>(p.set.floats.begin(), p.set.floats.end()),
        p.set.labels, classes, p.wd);
    BOOST_TEST(single.loss == exact.objective, boost::test_tools::tolerance(1e-6));
    for (const auto& [workers, shards] : std::vector<std::pair<int, int>>{{1, 1}, {2, 3}, {4, 2}, {3, 1}}) {
      BOOST_TEST_CONTEXT(classes << " classes, " << workers << " workers, " << shards << " shards") {
        const ClusterRun run = Sandblast(p, workers, shards, 10 * workers, 0.8);
        BOOST_TEST(run.outcome.loss == single.loss, boost::test_tools::tolerance(1e-6));
        BOOST_TEST(run.outcome.loss == exact.objective, boost::test_tools::tolerance(1e-6));
        BOOST_TEST(std::abs(run.outcome.iterations - single.iterations) <= 5);
        BOOST_TEST(run.lost.empty());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_slow_workers_units_go_to_the_others) {
  Problem p(3, 21);
  const Outcome single = Single(p);
  const ClusterRun run = Sandblast(p, 3, 2, 30, 0.7, /*slow=*/2, 30ms);
  BOOST_TEST(run.outcome.loss == single.loss, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(run.units_per_worker[2] * 3 < run.units_per_worker[0]);
  BOOST_TEST(run.backups_won > 0);
}

BOOST_AUTO_TEST_CASE(a_worker_that_dies_mid_run_has_its_units_reassigned) {
  Problem p(3, 31);
  const Outcome single = Single(p);
  const ClusterRun run = Sandblast(p, 3, 2, 30, 0.8, -1, 0ms, /*dies=*/1, /*die_at=*/25);
  BOOST_TEST(run.outcome.loss == single.loss, boost::test_tools::tolerance(1e-6));
  BOOST_REQUIRE(run.lost.size() == 1u);
  BOOST_TEST(run.lost[0].find("worker rank 1") == 0u, run.lost[0]);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace sandblaster_test
}  // namespace dtrain::dist
