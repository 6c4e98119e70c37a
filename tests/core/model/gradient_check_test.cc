// Finite-difference checks of Model::ForwardBackward for every layer kind, activation and loss.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/math/buffer.h"
#include "core/model/model.h"

namespace dtrain::model {
namespace gradient_check_test {

struct Case {
  ModelSpec spec;
  float weight_decay;
};

// Loss the gradient is taken of: mean data loss + L2 penalty.
double TotalLoss(const Model& m, const math::FloatBuffer& p, const math::FloatBuffer& x,
                 const std::vector<float>& y, int rows, float wd, Workspace& ws) {
  LossValue v = m.Evaluate(p.data(), x.data(), y.data(), rows, ws);
  return v.loss_sum / rows + m.WeightDecayPenalty(p.data(), wd);
}

// The smallest |pre-activation| of the first hidden layer over the batch: a central difference
// with step eps crosses a ReLU's kink (where no derivative exists) when it is about eps * |x|.
double NearestKink(const Model& model, const math::FloatBuffer& params, const math::FloatBuffer& x,
                   int rows) {
  if (model.spec().hidden.empty()) return 1.0;
  ModelSpec first = model.spec();  // the first layer alone, without its activation
  first.outputs = first.hidden.front();
  first.hidden.clear();
  first.loss = LossType::kMeanSquaredError;
  Model probe(first);
  Workspace ws(probe, rows);
  const float* z = probe.Forward(params.data(), x.data(), rows, ws);
  double nearest = 1e9;
  for (int i = 0; i < rows * first.outputs; ++i) nearest = std::min(nearest, std::fabs(static_cast<double>(z[i])));
  return nearest;
}

void CheckGradient(const Case& c) {
  BOOST_TEST_CONTEXT(FormatModelSpec(c.spec) << " wd=" << c.weight_decay) {
    Model model(c.spec);
    const int rows = 5;
    std::mt19937 rng(42);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    math::FloatBuffer params(model.NumParams()), grad(model.NumParams());
    math::FloatBuffer x(static_cast<std::size_t>(rows) * c.spec.inputs);
    // A point where the loss is differentiable: for ReLU, every first-layer pre-activation at
    // least 0.05 from the kink (a new draw until it is).
    for (int tries = 0; tries < 100; ++tries) {
      model.Init(params, 7);
      // Non-zero biases so every path is exercised.
      for (float& p : params) p += 0.05f * normal(rng);
      for (float& v : x) v = normal(rng);
      if (c.spec.activation != math::Activation::kRelu ||
          NearestKink(model, params, x, rows) >= 0.05) {
        break;
      }
    }
    std::vector<float> y(rows);
    for (int r = 0; r < rows; ++r) {
      switch (c.spec.loss) {
        case LossType::kSoftmaxCrossEntropy:
          y[r] = static_cast<float>(r % c.spec.outputs);
          break;
        case LossType::kBinaryCrossEntropy:
          y[r] = static_cast<float>(r % 2);
          break;
        case LossType::kMeanSquaredError:
          y[r] = normal(rng);
          break;
      }
    }
    Workspace ws(model, rows);
    model.ForwardBackward(params.data(), x.data(), y.data(), rows, c.weight_decay, grad.data(),
                          ws);

    const float eps = 1e-2f;
    double max_error = 0.0;
    for (std::size_t i = 0; i < params.size(); ++i) {
      const float saved = params[i];
      params[i] = saved + eps;
      const double plus = TotalLoss(model, params, x, y, rows, c.weight_decay, ws);
      params[i] = saved - eps;
      const double minus = TotalLoss(model, params, x, y, rows, c.weight_decay, ws);
      params[i] = saved;
      const double numeric = (plus - minus) / (2.0 * eps);
      const double error = std::abs(numeric - grad[i]) / std::max(1.0, std::abs(numeric));
      max_error = std::max(max_error, error);
      BOOST_TEST_CONTEXT("parameter " << i) { BOOST_TEST(error < 2e-3); }
    }
    BOOST_TEST_MESSAGE("max relative error " << max_error);
  }
}

ModelSpec Spec(ModelType type, int inputs, std::vector<int> hidden, math::Activation act,
               int outputs, LossType loss) {
  ModelSpec s;
  s.type = type;
  s.inputs = inputs;
  s.hidden = std::move(hidden);
  s.activation = act;
  s.outputs = outputs;
  s.loss = loss;
  return s;
}

BOOST_AUTO_TEST_SUITE(gradient_check)

BOOST_AUTO_TEST_CASE(linear_regression_mse) {
  CheckGradient({Spec(ModelType::kLinear, 6, {}, math::Activation::kRelu, 1,
                      LossType::kMeanSquaredError),
                 0.0f});
}

BOOST_AUTO_TEST_CASE(logistic_regression_bce) {
  CheckGradient({Spec(ModelType::kLogistic, 6, {}, math::Activation::kRelu, 1,
                      LossType::kBinaryCrossEntropy),
                 0.0f});
}

BOOST_AUTO_TEST_CASE(softmax_regression_xent_with_weight_decay) {
  CheckGradient({Spec(ModelType::kSoftmax, 6, {}, math::Activation::kRelu, 4,
                      LossType::kSoftmaxCrossEntropy),
                 0.1f});
}

BOOST_AUTO_TEST_CASE(mlp_every_activation_and_loss) {
  for (math::Activation act :
       {math::Activation::kTanh, math::Activation::kSigmoid, math::Activation::kRelu}) {
    CheckGradient({Spec(ModelType::kMlp, 5, {7, 4}, act, 3, LossType::kSoftmaxCrossEntropy),
                   0.05f});
    CheckGradient({Spec(ModelType::kMlp, 5, {6}, act, 1, LossType::kMeanSquaredError), 0.0f});
    CheckGradient({Spec(ModelType::kMlp, 5, {6}, act, 1, LossType::kBinaryCrossEntropy), 0.0f});
  }
}

BOOST_AUTO_TEST_CASE(softmax_xent_is_stable_for_huge_logits) {
  const float logits[] = {1000.0f, -1000.0f, 0.0f, 88.0f, 89.0f, 90.0f};
  const float labels[] = {0.0f, 2.0f};
  float grad[6];
  LossValue v = ComputeLoss(LossType::kSoftmaxCrossEntropy, logits, labels, 2, 3, grad);
  BOOST_TEST(std::isfinite(v.loss_sum));
  BOOST_TEST(v.correct == 2);
  for (float g : grad) BOOST_TEST(std::isfinite(g));
  // Row 1: log(e^-2 + e^-1 + 1) ≈ 0.4076; row 0 contributes ~0.
  BOOST_TEST(v.loss_sum == 0.40760596, boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(bce_is_stable_for_huge_logits) {
  const float logits[] = {500.0f, -500.0f};
  const float labels[] = {0.0f, 0.0f};
  float grad[2];
  LossValue v = ComputeLoss(LossType::kBinaryCrossEntropy, logits, labels, 2, 1, grad);
  BOOST_TEST(v.loss_sum == 500.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(v.correct == 1);
  BOOST_TEST(grad[0] == 0.5f, boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(grad[1] == 0.0f);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace gradient_check_test
}  // namespace dtrain::model
