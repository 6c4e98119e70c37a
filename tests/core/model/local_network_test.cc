// LocalNetwork with threads: a batch split over threads (by rows for MLPs, by slices for the
// rest) gives the whole batch's loss and gradient (up to rounding), the same bits for the same
// thread count, and a model with running statistics is not split; an optimizer step taken
// inside the pass gives the bits of the pass followed by the step; a watched pass tells when each
// layer's gradient is final.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <random>

#include "core/math/buffer.h"
#include "core/math/gemm.h"
#include "core/math/part_range.h"
#include "core/math/thread_team.h"
#include "core/model/network.h"
#include "core/optim/optimizer.h"

namespace dtrain::model {
namespace local_network_test {

ModelSpec Mlp() {
  ModelSpec s;
  s.type = ModelType::kMlp;
  s.inputs = 12;
  s.hidden = {20, 9};
  s.activation = math::Activation::kTanh;
  s.outputs = 4;
  return s;
}

ModelSpec WithDropout() {
  ModelSpec s;
  s.type = ModelType::kSequential;
  s.inputs = 12;
  s.input_shape = {12, 1, 1};
  s.outputs = 4;
  s.layers = {{.kind = LayerKind::kDense, .units = 16, .activation = math::Activation::kRelu},
              {.kind = LayerKind::kDropout, .rate = 0.3f},
              {.kind = LayerKind::kDense, .units = 4}};
  return s;
}

// Convolution and pooling keep scratch and state per pass: a batch of this model is split into
// slices with a workspace and a gradient each.
ModelSpec Convolutional() {
  ModelSpec s;
  s.type = ModelType::kSequential;
  s.inputs = 12;
  s.input_shape = {1, 3, 4};
  s.outputs = 4;
  s.layers = {{.kind = LayerKind::kConv2d,
               .filters = 3,
               .kernel = 3,
               .stride = 1,
               .padding = 1,
               .activation = math::Activation::kRelu},
              {.kind = LayerKind::kMaxPool2d, .kernel = 2},
              {.kind = LayerKind::kFlatten},
              {.kind = LayerKind::kDense, .units = 4}};
  return s;
}

ModelSpec WithBatchNorm() {
  ModelSpec s = WithDropout();
  s.layers[0].activation = math::Activation::kIdentity;
  s.layers[1] = {.kind = LayerKind::kBatchNorm};
  return s;
}

struct Batch {
  Batch(int rows, int inputs, int classes) : x(static_cast<std::size_t>(rows) * inputs), y(rows) {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : x) v = normal(rng);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i % classes);
  }
  math::FloatBuffer x;
  std::vector<float> y;
};

struct Pass {
  LossValue value;
  math::FloatBuffer grad;
};

Pass Run(LocalNetwork& net, const math::FloatBuffer& params, const Batch& b, int rows,
         std::uint64_t noise_seed = 9) {
  Pass p{{}, math::FloatBuffer(net.NumParams())};
  net.SetNoiseSeed(noise_seed);
  const Result<LossValue> v =
      net.ForwardBackward(params.data(), b.x.data(), b.y.data(), rows, 1e-3f, p.grad.data());
  BOOST_REQUIRE(v.ok());
  p.value = v.value();
  return p;
}

// The plain pass of the whole batch on one thread (Model::ForwardBackward), the reference.
Pass WholePass(const ModelSpec& spec, const math::FloatBuffer& params, const Batch& b, int rows) {
  const Model model(spec);
  Workspace ws(model, rows);
  ws.SetNoiseSeed(9);
  Pass p{{}, math::FloatBuffer(model.NumParams())};
  p.value = model.ForwardBackward(params.data(), b.x.data(), b.y.data(), rows, 1e-3f,
                                  p.grad.data(), ws);
  return p;
}

struct SingleBlasThread {
  SingleBlasThread() { math::SetBlasThreads(1); }
};

BOOST_FIXTURE_TEST_SUITE(local_network, SingleBlasThread)

// The gradient of a batch split over `threads` against the whole batch's.
void CheckSplit(const ModelSpec& spec, int rows, int threads, float tolerance) {
  const Batch batch(rows, 12, 4);
  LocalNetwork split(spec, rows, threads);
  BOOST_TEST(split.Slices() == threads);
  math::FloatBuffer params(split.NumParams());
  split.Init(params, 5);
  const Pass expected = WholePass(spec, params, batch, rows), got = Run(split, params, batch, rows);
  BOOST_TEST(got.value.correct == expected.value.correct);
  BOOST_TEST(got.value.loss_sum == expected.value.loss_sum, boost::test_tools::tolerance(1e-5));
  for (std::size_t i = 0; i < got.grad.size(); ++i) {
    BOOST_TEST_REQUIRE(std::fabs(got.grad[i] - expected.grad[i]) <=
                       1e-6f + tolerance * std::fabs(expected.grad[i]));
  }
  const Result<LossValue> eval =
      split.Evaluate(params.data(), batch.x.data(), batch.y.data(), rows);
  BOOST_REQUIRE(eval.ok());
  BOOST_TEST(eval.value().loss_sum == expected.value.loss_sum, boost::test_tools::tolerance(1e-5));
}

BOOST_AUTO_TEST_CASE(a_split_batch_gives_the_whole_batch_loss_and_gradient) {
  // MLPs split by rows, the others by slices (each with its gradient).
  BOOST_TEST(Model(Mlp()).SplitsRows());
  BOOST_TEST(!Model(Convolutional()).SplitsRows());
  for (const ModelSpec& spec : {Mlp(), Convolutional()}) {
    BOOST_TEST_CONTEXT(FormatModelSpec(spec)) {
      // 37 rows: slices of unequal length (13, 12, 12 for three threads) weigh by their rows.
      for (int threads : {2, 3, 5}) {
        BOOST_TEST_CONTEXT("threads " << threads) { CheckSplit(spec, 37, threads, 1e-4f); }
      }
      // Fewer rows than threads: the empty slices are left out.
      CheckSplit(spec, 2, 4, 1e-5f);
    }
  }
}

BOOST_AUTO_TEST_CASE(one_thread_takes_the_row_pass_with_the_plain_pass_bits) {
  const Batch batch(37, 12, 4);
  LocalNetwork net(Mlp(), 37);
  BOOST_TEST(net.Slices() == 1);
  math::FloatBuffer params(net.NumParams());
  net.Init(params, 5);
  const Pass expected = WholePass(Mlp(), params, batch, 37), got = Run(net, params, batch, 37);
  BOOST_TEST(got.value.loss_sum == expected.value.loss_sum);
  BOOST_TEST(std::equal(got.grad.begin(), got.grad.end(), expected.grad.begin()));
}

// Three steps taken inside the pass (ForwardBackwardStep) against the pass, then Step.
void CheckStepInPass(const ModelSpec& spec, int threads, optim::OptimizerType type) {
  const Batch batch(37, 12, 4);
  LocalNetwork fused(spec, 37, threads), plain(spec, 37, threads);
  const std::size_t n = fused.NumParams();
  math::FloatBuffer p_fused(n), p_plain(n), g_fused(n), g_plain(n);
  fused.Init(p_fused, 5);
  plain.Init(p_plain, 5);
  auto o_fused = optim::MakeOptimizer({.type = type}, 0, n);
  auto o_plain = optim::MakeOptimizer({.type = type}, 0, n);
  for (int step = 0; step < 3; ++step) {
    const Result<LossValue> a = fused.ForwardBackwardStep(
        p_fused.data(), batch.x.data(), batch.y.data(), 37, 1e-3f, g_fused.data(), *o_fused, 0.05f);
    const Result<LossValue> b = plain.ForwardBackward(p_plain.data(), batch.x.data(),
                                                      batch.y.data(), 37, 1e-3f, g_plain.data());
    BOOST_REQUIRE(a.ok() && b.ok());
    o_plain->Step(p_plain, g_plain, 0.05f);
    BOOST_TEST(a.value().loss_sum == b.value().loss_sum);
  }
  BOOST_TEST(o_fused->steps() == 3u);
  BOOST_TEST(std::equal(g_fused.begin(), g_fused.end(), g_plain.begin()));  // grad kept
  BOOST_TEST(std::equal(p_fused.begin(), p_fused.end(), p_plain.begin()));
}

BOOST_AUTO_TEST_CASE(a_step_inside_the_pass_equals_the_pass_then_the_step) {
  // MLPs step each run of parameters in the row pass; conv nets take the pass, then the step.
  for (const ModelSpec& spec : {Mlp(), Convolutional()}) {
    for (int threads : {1, 2, 3}) {
      for (optim::OptimizerType type :
           {optim::OptimizerType::kMomentum, optim::OptimizerType::kAdam}) {
        BOOST_TEST_CONTEXT(FormatModelSpec(spec)
                           << ", threads " << threads << ", " << optim::OptimizerTypeName(type)) {
          CheckStepInPass(spec, threads, type);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_same_thread_count_gives_the_same_bits) {
  const Batch batch(64, 12, 4);
  for (const ModelSpec& spec : {Mlp(), WithDropout()}) {
    LocalNetwork a(spec, 64, 2), b(spec, 64, 2);
    math::FloatBuffer params(a.NumParams());
    a.Init(params, 5);
    const Pass pa = Run(a, params, batch, 64), pb = Run(b, params, batch, 64);
    BOOST_TEST(pa.value.loss_sum == pb.value.loss_sum);
    BOOST_TEST(std::equal(pa.grad.begin(), pa.grad.end(), pb.grad.begin()));
    // Another step seed draws other dropout masks in every slice.
    if (spec.type == ModelType::kSequential) {
      const Pass other = Run(a, params, batch, 64, 10);
      BOOST_TEST(!std::equal(pa.grad.begin(), pa.grad.end(), other.grad.begin()));
    }
  }
}

// A watched pass (Network::WatchGradient) reports each layer with parameters once, last first,
// after that layer's gradient is final, and computes the unwatched pass's bits.
BOOST_AUTO_TEST_CASE(a_watched_pass_reports_each_layer_when_final_with_the_same_bits) {
  const Batch batch(37, 12, 4);
  // The row pass on one and on two threads, a pass that is not split (batchnorm).
  const std::pair<ModelSpec, int> cases[] = {{Mlp(), 1}, {Mlp(), 2}, {WithBatchNorm(), 2}};
  for (const auto& [spec, threads] : cases) {
    BOOST_TEST_CONTEXT(FormatModelSpec(spec) << ", threads " << threads) {
      LocalNetwork watched(spec, 37, threads), plain(spec, 37, threads);
      math::FloatBuffer params(plain.NumParams());
      plain.Init(params, 5);
      const Pass expected = Run(plain, params, batch, 37);
      std::vector<std::size_t> reported;
      Pass got{{}, math::FloatBuffer(watched.NumParams())};
      std::vector<float> final_from_report;  // the gradient's floats from each report's offset on
      watched.WatchGradient([&](std::size_t begin) {
        reported.push_back(begin);
        const std::size_t end = reported.size() == 1 ? got.grad.size() : reported.end()[-2];
        final_from_report.insert(final_from_report.end(), got.grad.data() + begin,
                                 got.grad.data() + end);
      });
      watched.SetNoiseSeed(9);
      const Result<LossValue> v = watched.ForwardBackward(
          params.data(), batch.x.data(), batch.y.data(), 37, 1e-3f, got.grad.data());
      BOOST_REQUIRE(v.ok());
      BOOST_TEST(v.value().loss_sum == expected.value.loss_sum);
      BOOST_TEST(std::equal(got.grad.begin(), got.grad.end(), expected.grad.begin()));
      // One report per layer with parameters, at its first float, from the last layer down.
      std::vector<std::size_t> starts;
      const Model& model = watched.model();
      for (std::size_t l = model.NumLayers(); l-- > 0;) {
        if (model.layer(l).NumParams() > 0) starts.push_back(model.ParamOffset(l));
      }
      BOOST_TEST(reported == starts, boost::test_tools::per_element());
      // What each report declared final was already the final gradient then.
      std::vector<float> expected_order;
      for (std::size_t i = 0; i < starts.size(); ++i) {
        const std::size_t end = i == 0 ? expected.grad.size() : starts[i - 1];
        expected_order.insert(expected_order.end(), expected.grad.data() + starts[i],
                              expected.grad.data() + end);
      }
      BOOST_TEST((final_from_report == expected_order));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_model_with_running_statistics_runs_whole) {
  LocalNetwork net(WithBatchNorm(), 64, 4);
  BOOST_TEST(net.Slices() == 1);
  BOOST_TEST(!SplitsBatches(net.model()));
  BOOST_TEST(SplitsBatches(Model(Mlp())));
}

BOOST_AUTO_TEST_CASE(a_team_runs_every_part_once_and_parts_cover_the_range) {
  math::ThreadTeam team(3);
  for (int round = 0; round < 100; ++round) {
    std::vector<int> hits(3, 0);
    team.Run([&](int part) { ++hits[static_cast<std::size_t>(part)]; });
    BOOST_TEST_REQUIRE((hits == std::vector<int>{1, 1, 1}));
  }
  std::size_t next = 0;
  for (int part = 0; part < 4; ++part) {
    const math::PartRange r = math::PartOf(10, 4, part);
    BOOST_TEST(r.begin == next);
    BOOST_TEST(r.end - r.begin == (part < 2 ? 3u : 2u));
    next = r.end;
  }
  BOOST_TEST(next == 10u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace local_network_test
}  // namespace dtrain::model
