// Model parallelism: a replica split over K processes ("layers": a pipeline, with and without
// micro-batches; "tensor": every layer's units split) computes the loss and gradient of the
// unpartitioned model, within float rounding, for K = 2, 3, 4, with its partitions as forked
// processes talking over real links; each partition initialises exactly its part of the whole
// model; a finite-difference check goes through the partitioned model; and the plan balances
// and lays out the parameters as it says.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/process.h"
#include "core/dist/loopback_ring.h"
#include "core/dist/partition_exchange.h"
#include "core/dist/partitioned_mlp.h"
#include "core/model/model.h"
#include "core/model/partition_plan.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace partitioned_mlp_test {

using model::Model;
using model::ModelSpec;
using model::PartitionKind;
using model::PartitionPlan;
using testing::ForkRanks;
using testing::MakeRing;
using testing::RunRanks;
using testing::Transport;
using dtrain::testing::WriteAll;

constexpr std::uint64_t kSeed = 7;
constexpr int kRows = 13;
constexpr float kWeightDecay = 0.01f;

ModelSpec Spec(model::LossType loss = model::LossType::kSoftmaxCrossEntropy) {
  ModelSpec s;
  s.type = model::ModelType::kMlp;
  s.inputs = 7;
  s.hidden = {9, 6, 5};
  s.activation = math::Activation::kTanh;
  s.outputs = 4;
  s.loss = loss;
  return s;
}

struct Batch {
  std::vector<float> x, y;
};

Batch MakeBatch(int rows, int inputs, int classes) {
  Batch b;
  std::uint64_t state = 12345;
  const auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>(state >> 40) / static_cast<float>(1 << 24);
  };
  for (int i = 0; i < rows * inputs; ++i) b.x.push_back(2.0f * next() - 1.0f);
  for (int r = 0; r < rows; ++r) b.y.push_back(static_cast<float>(r % classes));
  return b;
}

// What the whole model computes: its loss and gradient, in the model's layout.
struct Reference {
  std::vector<float> params, grad;
  model::LossValue loss;
};

Reference Whole(const ModelSpec& spec, const Batch& batch) {
  Model m(spec);
  Reference r{std::vector<float>(m.NumParams()), std::vector<float>(m.NumParams()), {}};
  m.Init(r.params, kSeed);
  model::Workspace ws(m, kRows);
  r.loss = m.ForwardBackward(r.params.data(), batch.x.data(), batch.y.data(), kRows, kWeightDecay,
                             r.grad.data(), ws);
  return r;
}

// max |a - b| / max |b|: the error relative to the gradient's scale.
double RelativeError(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

std::string Floats(std::span<const float> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size_bytes());
}

// One step of the partitioned model, its partitions as forked processes over loopback TCP;
// checks the gradient and loss against the whole model's and each partition's initialisation.
void CheckPartitioned(PartitionKind kind, int parts, int micro_batches) {
  BOOST_TEST_CONTEXT(model::PartitionKindName(kind) << " K=" << parts << " M=" << micro_batches) {
    const ModelSpec spec = Spec();
    const Batch batch = MakeBatch(kRows, spec.inputs, spec.outputs);
    const Reference ref = Whole(spec, batch);
    const PartitionPlan plan = model::PlanPartitions(spec, kind, parts).value();
    const Model whole(spec);
    std::vector<float> partitioned(whole.NumParams());
    model::FromModelLayout(plan, whole, ref.params, partitioned);
    Result<LoopbackRing> ring = LoopbackRing::Listen(parts);
    BOOST_REQUIRE(ring.ok());

    const std::vector<testing::ForkedRank> ranks = ForkRanks(parts, [&](int p, int fd) {
      Result<RingLinks> links = ring.value().Join(p, std::chrono::seconds(10));
      if (!links.ok()) return 2;
      PartitionExchange exchange(p, parts, links.value().left, links.value().right);
      PartitionedMlp net(spec, plan, exchange, micro_batches, kRows);
      std::vector<float> own(net.NumParams()), grad(net.NumParams());
      net.Init(own, kSeed);
      const bool same_init =
          std::equal(own.begin(), own.end(), partitioned.begin() + plan.offset[p]);
      Result<model::LossValue> loss = net.ForwardBackward(own.data(), batch.x.data(),
                                                          batch.y.data(), kRows, kWeightDecay,
                                                          grad.data());
      if (!loss.ok()) return 3;
      const float head[3] = {same_init ? 1.0f : 0.0f, static_cast<float>(loss.value().loss_sum),
                             static_cast<float>(loss.value().correct)};
      const std::string out = Floats(head) + Floats(grad);
      return WriteAll(fd, out.data(), out.size()) ? 0 : 4;
    });

    std::vector<float> grad(whole.NumParams());
    for (int p = 0; p < parts; ++p) {
      const testing::ForkedRank& r = ranks[static_cast<std::size_t>(p)];
      BOOST_REQUIRE_MESSAGE(WIFEXITED(r.wait_status) && WEXITSTATUS(r.wait_status) == 0,
                            "partition " << p << " failed: " << r.wait_status);
      BOOST_REQUIRE(r.output.size() == (3 + plan.Size(p)) * sizeof(float));
      const auto* floats = reinterpret_cast<const float*>(r.output.data());
      BOOST_TEST(floats[0] == 1.0f, "partition " << p << " initialised otherwise");
      BOOST_TEST(std::fabs(floats[1] - ref.loss.loss_sum) <= 1e-6 * std::fabs(ref.loss.loss_sum));
      BOOST_TEST(floats[2] == static_cast<float>(ref.loss.correct));
      std::copy_n(floats + 3, plan.Size(p), grad.begin() + plan.offset[p]);
    }
    std::vector<float> natural(whole.NumParams());
    model::ToModelLayout(plan, whole, grad, natural);
    const double error = RelativeError(natural, ref.grad);
    BOOST_TEST_MESSAGE(model::PartitionKindName(kind) << " K=" << parts << " M=" << micro_batches
                                                      << ": relative error " << error);
    BOOST_TEST(error <= 1e-6);
  }
}

BOOST_AUTO_TEST_SUITE(partitioned_mlp)

BOOST_AUTO_TEST_CASE(a_pipeline_computes_the_whole_models_gradient) {
  for (int parts : {2, 3, 4}) CheckPartitioned(PartitionKind::kLayers, parts, 1);
}

BOOST_AUTO_TEST_CASE(micro_batches_give_the_gradient_of_one_batch) {
  for (int parts : {2, 4}) {
    for (int micro : {4, 13}) CheckPartitioned(PartitionKind::kLayers, parts, micro);
  }
}

BOOST_AUTO_TEST_CASE(tensor_partitions_compute_the_whole_models_gradient) {
  for (int parts : {2, 3, 4}) CheckPartitioned(PartitionKind::kTensor, parts, 1);
}

// Central differences of the partitioned model's loss, every partition evaluating in step while
// the one that owns a parameter moves it, against the gradient it computed.
BOOST_AUTO_TEST_CASE(finite_differences_through_a_partitioned_model) {
  for (PartitionKind kind : {PartitionKind::kLayers, PartitionKind::kTensor}) {
    const ModelSpec spec = Spec();
    const Batch batch = MakeBatch(kRows, spec.inputs, spec.outputs);
    constexpr int kParts = 2;
    const PartitionPlan plan = model::PlanPartitions(spec, kind, kParts).value();
    std::vector<RingLinks> ring = MakeRing(Transport::kTcp, kParts);
    std::vector<double> worst(kParts, 0.0);
    const std::vector<Status> done = RunRanks(kParts, [&](int p) -> Status {
      const RingLinks& links = ring[static_cast<std::size_t>(p)];
      PartitionExchange exchange(p, kParts, links.left, links.right);
      PartitionedMlp net(spec, plan, exchange, 2, kRows);
      std::vector<float> params(net.NumParams()), grad(net.NumParams());
      net.Init(params, kSeed);
      Result<model::LossValue> v = net.ForwardBackward(params.data(), batch.x.data(),
                                                       batch.y.data(), kRows, 0.0f, grad.data());
      if (!v.ok()) return v.status();
      const auto mean_loss = [&]() -> Result<double> {
        Result<model::LossValue> e =
            net.Evaluate(params.data(), batch.x.data(), batch.y.data(), kRows);
        if (!e.ok()) return e.status();
        return e.value().loss_sum / kRows;
      };
      constexpr float kStep = 1e-2f;
      // Every partition takes its turn; the others evaluate along.
      for (int owner = 0; owner < kParts; ++owner) {
        const std::size_t count = plan.Size(owner);
        for (std::size_t i = 0; i < count; i += std::max<std::size_t>(1, count / 12)) {
          const float kept = p == owner ? params[i] : 0.0f;
          if (p == owner) params[i] = kept + kStep;
          Result<double> up = mean_loss();
          if (p == owner) params[i] = kept - kStep;
          Result<double> down = mean_loss();
          if (p == owner) params[i] = kept;
          if (!up.ok() || !down.ok()) return Status::Error("evaluate failed");
          if (p != owner) continue;
          const double numeric = (up.value() - down.value()) / (2.0 * kStep);
          const double error = std::fabs(numeric - grad[i]) / std::max(1e-2, std::fabs(numeric));
          worst[static_cast<std::size_t>(p)] = std::max(worst[static_cast<std::size_t>(p)], error);
        }
      }
      return Status::Ok();
    });
    for (int p = 0; p < kParts; ++p) {
      BOOST_TEST(done[static_cast<std::size_t>(p)].ok(), done[static_cast<std::size_t>(p)].message());
      BOOST_TEST_MESSAGE(model::PartitionKindName(kind) << " partition " << p
                                                        << ": worst relative error "
                                                        << worst[static_cast<std::size_t>(p)]);
      BOOST_TEST(worst[static_cast<std::size_t>(p)] < 2e-2);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_plan_balances_layers_and_splits_units) {
  ModelSpec spec = Spec();
  spec.hidden = {100, 3, 3, 100};
  const Model m(spec);
  const PartitionPlan layers = model::PlanPartitions(spec, PartitionKind::kLayers, 2).value();
  // Layers of (7+1)*100, (100+1)*3, (3+1)*3, (3+1)*100, (100+1)*4 parameters: the best cut
  // puts the first two on one side.
  BOOST_TEST(layers.first_layer == (std::vector<int>{0, 2, 5}), boost::test_tools::per_element());
  BOOST_TEST(layers.offset.back() == m.NumParams());
  BOOST_TEST(layers.offset[1] == m.layers()[2].weight_offset);

  const PartitionPlan tensor = model::PlanPartitions(spec, PartitionKind::kTensor, 3).value();
  BOOST_TEST(tensor.columns[0] == (std::vector<int>{0, 34, 67, 100}), boost::test_tools::per_element());
  BOOST_TEST(tensor.columns[4] == (std::vector<int>{0, 2, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(tensor.offset.back() == m.NumParams());
  // The layouts are each other's inverse, and move every float.
  std::vector<float> natural(m.NumParams()), partitioned(m.NumParams()), back(m.NumParams());
  for (std::size_t i = 0; i < natural.size(); ++i) natural[i] = static_cast<float>(i);
  model::FromModelLayout(tensor, m, natural, partitioned);
  model::ToModelLayout(tensor, m, partitioned, back);
  BOOST_TEST(back == natural, boost::test_tools::per_element());
  std::vector<float> sorted = partitioned;
  std::sort(sorted.begin(), sorted.end());
  BOOST_TEST(sorted == natural, boost::test_tools::per_element());
  // Partition 1's first weight is W_0[0][34].
  BOOST_TEST(partitioned[tensor.offset[1]] == natural[m.layers()[0].weight_offset + 34]);
}

BOOST_AUTO_TEST_CASE(a_model_too_small_to_split_is_refused_saying_why) {
  ModelSpec spec = Spec();
  Result<PartitionPlan> deep = model::PlanPartitions(spec, PartitionKind::kLayers, 5);
  BOOST_REQUIRE(!deep.ok());
  BOOST_TEST(deep.status().message() == "partition = \"layers\" with model_parallel = 5 needs at "
                                        "least 5 layers; the model has 4");
  Result<PartitionPlan> wide = model::PlanPartitions(spec, PartitionKind::kTensor, 5);
  BOOST_REQUIRE(!wide.ok());
  BOOST_TEST(wide.status().message() == "partition = \"tensor\" with model_parallel = 5 splits "
                                        "every layer's 5 ways, but layer 4 has 4 units");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace partitioned_mlp_test
}  // namespace dtrain::dist
