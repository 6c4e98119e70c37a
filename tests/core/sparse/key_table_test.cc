// A KeyTable holds only the keys a model has touched, and training through it (pull the batch's
// keys, compute, push their gradients) gives the model the dense path gives on the same rows
// densified, for each lazy optimizer.
#include "core/sparse/key_table.h"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/data/click_synthetic.h"
#include "core/model/model.h"

namespace dtrain::sparse {
namespace key_table_test {

using optim::OptimizerOptions;
using optim::OptimizerType;

constexpr int kFeatures = 50;
constexpr std::size_t kBatch = 16;

BOOST_AUTO_TEST_SUITE(key_table)

BOOST_AUTO_TEST_CASE(sparse_and_dense_paths_train_the_same_model) {
  const data::ClickData clicks =
      data::MakeClicks({.rows = 96, .features = kFeatures, .nonzeros = 5, .seed = 4});
  const data::SparseRows& rows = clicks.rows;
  const data::Dataset dense_rows = data::Densify(rows);
  const SparseModel sparse({.type = SparseModelType::kLogistic});
  model::ModelSpec spec;
  spec.type = model::ModelType::kLogistic;
  spec.inputs = kFeatures;
  spec.outputs = 1;
  spec.loss = model::LossType::kBinaryCrossEntropy;
  const model::Model dense(spec);

  for (const OptimizerOptions& o :
       {OptimizerOptions{.type = OptimizerType::kSgd},
        OptimizerOptions{.type = OptimizerType::kAdagrad, .initial_accumulator = 0.1f},
        OptimizerOptions{.type = OptimizerType::kFtrl, .alpha = 0.3f, .l1 = 0.01f}}) {
    BOOST_TEST_CONTEXT(optim::OptimizerTypeName(o.type)) {
      BOOST_TEST_REQUIRE(CheckSparseOptimizer(o).ok());
      KeyTable table(sparse, o, 7);
      std::vector<float> params(dense.NumParams(), 0.0f), grad(params.size());
      auto optimizer = optim::MakeOptimizer(o, 0, params.size());
      model::Workspace ws(dense, kBatch);
      std::vector<float> x(kBatch * kFeatures), y(kBatch);
      for (int epoch = 0; epoch < 3; ++epoch) {
        for (std::size_t first = 0; first < rows.rows(); first += kBatch) {
          std::vector<std::uint32_t> batch_rows(kBatch);
          std::iota(batch_rows.begin(), batch_rows.end(), static_cast<std::uint32_t>(first));
          const SparseBatch batch = MakeSparseBatch(rows, batch_rows);
          std::vector<float> slots(batch.keys.size()), grad_slots(slots.size()), grad_globals(1);
          table.Pull(batch.keys, slots.data());
          sparse.ForwardBackward(batch, slots.data(), table.globals(), grad_slots.data(),
                                 grad_globals.data());
          table.Push(batch.keys, grad_slots.data(), grad_globals.data(), 0.5f);

          std::copy_n(dense_rows.floats.data() + first * kFeatures, x.size(), x.begin());
          std::copy_n(dense_rows.labels.data() + first, kBatch, y.begin());
          dense.ForwardBackward(params.data(), x.data(), y.data(), kBatch, 0.0f, grad.data(), ws);
          optimizer->Step(params, grad, 0.5f);
        }
      }
      for (int f = 0; f < kFeatures; ++f) {
        const float* slot = table.Find(static_cast<std::uint32_t>(f));
        const float sparse_weight = slot != nullptr ? slot[0] : 0.0f;
        BOOST_TEST(
            std::abs(sparse_weight - params[f]) <= 1e-5f * std::max(1.0f, std::abs(params[f])),
            "feature " << f << ": sparse " << sparse_weight << ", dense " << params[f]);
      }
      BOOST_TEST(table.globals()[0] == params[kFeatures], boost::test_tools::tolerance(1e-5f));
      BOOST_TEST(table.size() <= static_cast<std::size_t>(kFeatures));
    }
  }
}

BOOST_AUTO_TEST_CASE(only_touched_keys_are_held) {
  const SparseModel fm({.type = SparseModelType::kFm, .factors = 4, .init_scale = 0.1f});
  KeyTable table(fm, {.type = OptimizerType::kAdagrad}, 3);
  const std::vector<std::uint32_t> keys{5, 4'000'000'000u};
  std::vector<float> slots(keys.size() * fm.SlotWidth());
  table.Pull(keys, slots.data());
  BOOST_TEST(table.size() == 2u);
  BOOST_TEST(table.Find(6) == nullptr);
  BOOST_TEST_REQUIRE(table.Find(4'000'000'000u) != nullptr);
  std::vector<float> made(fm.SlotWidth());
  fm.InitSlot(3, 4'000'000'000u, made.data());  // what every process makes for that key
  BOOST_TEST(std::vector<float>(slots.begin() + 5, slots.end()) == made,
             boost::test_tools::per_element());
  BOOST_TEST(table.Bytes() < 1024u);

  const Status momentum = CheckSparseOptimizer({.type = OptimizerType::kMomentum});
  BOOST_TEST(!momentum.ok());
  BOOST_TEST(momentum.message().find("sgd, adagrad or ftrl") != std::string::npos);
  BOOST_TEST(!CheckSparseOptimizer({.type = OptimizerType::kAdam}).ok());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace key_table_test
}  // namespace dtrain::sparse
