// The full-batch objective (finite differences, work units adding up to the whole, samples) and
// L-BFGS on it reaching the exact optimum of convex problems computed independently by Newton's
// method.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "common/exact_optimum.h"
#include "common/gaussian_blobs.h"
#include "core/math/gemm.h"
#include "core/optim/lbfgs.h"
#include "core/optim/vector_slices.h"
#include "core/train/batch_objective.h"

namespace dtrain::train {
namespace batch_objective_test {

// Gaussian blobs, one per class, overlapping so that no weight vector separates them.
using testing::GaussianBlobs;

model::ModelSpec Spec(model::ModelType type, int inputs, int outputs) {
  model::ModelSpec s;
  s.type = type;
  s.inputs = inputs;
  s.outputs = outputs;
  s.loss = model::DefaultLoss(type, outputs);
  if (type == model::ModelType::kMlp) {
    s.hidden = {7};
    s.activation = math::Activation::kTanh;
  }
  return s;
}

struct Fixture {
  Fixture() { math::SetBlasThreads(1); }
};

BOOST_FIXTURE_TEST_SUITE(batch_objective, Fixture)

BOOST_AUTO_TEST_CASE(gradient_matches_finite_differences) {
  const data::Dataset set = GaussianBlobs(10, 4, 3, 1);
  const model::Model model(Spec(model::ModelType::kMlp, 4, 3));
  const data::Scaling scaling = data::ConstantScaling(1.0f);
  BatchObjective objective(model, set, scaling, ObjectiveRows(set.rows, 0, 1), 0.05f, 3);
  math::FloatBuffer params(model.NumParams()), grad(model.NumParams()), scratch(model.NumParams());
  model.Init(params, 3);
  for (std::size_t i = 0; i < params.size(); ++i) params[i] += 0.01f * static_cast<float>(i % 7);
  objective.Evaluate(params, grad);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const float saved = params[i];
    const float h = 1e-2f;
    params[i] = saved + h;
    const double up = objective.Evaluate(params, scratch);
    params[i] = saved - h;
    const double down = objective.Evaluate(params, scratch);
    params[i] = saved;
    const double numeric = (up - down) / (2.0 * h);
    BOOST_TEST_CONTEXT("parameter " << i) {
      BOOST_TEST(std::abs(numeric - grad[i]) <= 2e-3 * std::max(1.0, std::abs(numeric)));
    }
  }
}

BOOST_AUTO_TEST_CASE(work_units_add_up_to_the_whole) {
  const data::Dataset set = GaussianBlobs(50, 5, 3, 2);
  const model::Model model(Spec(model::ModelType::kSoftmax, 5, 3));
  const data::Scaling scaling = data::ConstantScaling(1.0f);
  BatchObjective objective(model, set, scaling, ObjectiveRows(set.rows, 0, 1), 0.1f, 8);
  math::FloatBuffer params(model.NumParams()), whole(model.NumParams()), parts(model.NumParams());
  model.Init(params, 5);
  const double f = objective.Evaluate(params, whole);
  double loss_sum = 0.0;
  for (std::size_t first : {0, 13, 40}) {
    const std::size_t last = first == 0 ? 13 : first == 13 ? 40 : 50;
    loss_sum += objective.AccumulateRows(params, first, last, parts).loss_sum;
  }
  const double g = FinishObjective(model, params, 0.1f, loss_sum, set.rows, parts);
  BOOST_TEST(g == f, boost::test_tools::tolerance(1e-6));
  for (std::size_t i = 0; i < whole.size(); ++i) {
    BOOST_TEST(parts[i] == whole[i], boost::test_tools::tolerance(1e-4f));
  }
}

BOOST_AUTO_TEST_CASE(a_sample_is_fixed_by_its_seed) {
  const std::vector<std::uint32_t> all = ObjectiveRows(100, 0, 7);
  BOOST_TEST(all.size() == 100u);
  BOOST_TEST(std::is_sorted(all.begin(), all.end()));
  BOOST_TEST(ObjectiveRows(100, 100, 7) == all);
  const std::vector<std::uint32_t> sample = ObjectiveRows(100, 30, 7);
  BOOST_TEST(sample.size() == 30u);
  BOOST_TEST(std::is_sorted(sample.begin(), sample.end()));
  BOOST_TEST(std::set<std::uint32_t>(sample.begin(), sample.end()).size() == 30u);
  BOOST_TEST(sample.back() < 100u);
  BOOST_TEST(ObjectiveRows(100, 30, 7) == sample);
  BOOST_TEST(ObjectiveRows(100, 30, 8) != sample);
}

// L-BFGS over the objective, from zero parameters, to its tolerances.
double Minimise(const model::Model& model, BatchObjective& objective, int history,
                std::int64_t* iterations) {
  optim::LbfgsOptions o;
  o.history = history;
  o.max_iterations = 500;
  o.gradient_tolerance = 1e-6;
  o.loss_tolerance = 1e-12;
  optim::LocalVectors v(optim::LbfgsVectorCount(o.history), model.NumParams(),
                        [&](std::span<const float> x, std::span<float> g) -> Result<double> {
                          return objective.Evaluate(x, g);
                        });
  optim::Lbfgs lbfgs(o, v);
  BOOST_REQUIRE(lbfgs.Start().ok());
  optim::LbfgsIteration last;
  do {
    Result<optim::LbfgsIteration> it = lbfgs.Iterate();
    BOOST_REQUIRE(it.ok());
    last = it.value();
  } while (last.stop == optim::LbfgsStop::kNone);
  BOOST_TEST(static_cast<int>(last.stop) != static_cast<int>(optim::LbfgsStop::kMaxIterations));
  *iterations = lbfgs.state().iteration;
  return lbfgs.state().loss;
}

BOOST_AUTO_TEST_CASE(lbfgs_reaches_the_exact_optimum_of_logistic_and_softmax_regression) {
  for (const int classes : {2, 4}) {
    const data::Dataset set = GaussianBlobs(600, 6, classes, 11 + classes);
    const auto type = classes == 2 ? model::ModelType::kLogistic : model::ModelType::kSoftmax;
    const model::Model model(Spec(type, 6, classes == 2 ? 1 : classes));
    const data::Scaling scaling = data::ConstantScaling(1.0f);
    const float wd = 0.01f;
    const testing::Optimum exact =
        testing::ExactOptimum(set.rows, set.features,
                              std::vector<float>(set.floats.begin(), set.floats.end()), set.labels,
                              classes, wd);
    BOOST_REQUIRE(exact.gradient_norm < 1e-10);
    for (const int history : {3, 10}) {
      for (const int chunk : {64, 600}) {
        BOOST_TEST_CONTEXT(classes << " classes, history " << history << ", chunks of " << chunk) {
          BatchObjective objective(model, set, scaling, ObjectiveRows(set.rows, 0, 1), wd, chunk);
          std::int64_t iterations = 0;
          const double f = Minimise(model, objective, history, &iterations);
          BOOST_TEST(f == exact.objective, boost::test_tools::tolerance(1e-6));
          BOOST_TEST(iterations < 200);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace batch_objective_test
}  // namespace dtrain::train
