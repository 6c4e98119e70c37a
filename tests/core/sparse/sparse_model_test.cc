// The sparse models: a batch re-indexed to the keys it touches; every gradient against finite
// differences; logistic and softmax regression equal to the dense models on the same rows
// densified (the slots of every feature then the globals are the dense parameters).
#include "core/sparse/sparse_model.h"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "common/central_differences.h"
#include "core/data/sparse_rows.h"
#include "core/model/model.h"
#include "core/sparse/sparse_batch.h"

namespace dtrain::sparse {
namespace sparse_model_test {

constexpr int kFeatures = 40;

// 10 rows of 1-6 features each (no repeats within a row), labels 0..classes-1.
data::SparseRows Rows(int classes, unsigned seed) {
  std::mt19937 rng(seed);
  data::SparseRows d;
  d.features = kFeatures;
  for (int r = 0; r < 10; ++r) {
    std::vector<std::uint32_t> row;
    const int nnz = 1 + static_cast<int>(rng() % 6);
    while (static_cast<int>(row.size()) < nnz) {
      const auto f = static_cast<std::uint32_t>(rng() % kFeatures);
      if (std::find(row.begin(), row.end(), f) == row.end()) row.push_back(f);
    }
    std::sort(row.begin(), row.end());
    for (std::uint32_t f : row) {
      d.index.push_back(f);
      d.value.push_back(std::uniform_real_distribution<float>(-1.5f, 1.5f)(rng));
    }
    d.row_start.push_back(d.index.size());
    d.labels.push_back(static_cast<float>(rng() % static_cast<unsigned>(classes)));
  }
  d.num_classes = classes;
  return d;
}

std::vector<float> Random(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.5f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<std::uint32_t> AllRows(const data::SparseRows& d) {
  std::vector<std::uint32_t> all(d.rows());
  for (std::uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  return all;
}

BOOST_AUTO_TEST_SUITE(sparse_model)

BOOST_AUTO_TEST_CASE(a_batch_is_reindexed_to_the_keys_it_touches) {
  data::SparseRows d;
  d.features = 1000;
  d.index = {7, 900, 3, 7, 500};
  d.value = {1, 2, 3, 4, 5};
  d.row_start = {0, 2, 4, 5};
  d.labels = {0, 1, 1};
  const std::vector<std::uint32_t> rows{2, 1};
  const SparseBatch b = MakeSparseBatch(d, rows);
  // Keys in the order the batch's rows first use them.
  BOOST_TEST(b.keys == (std::vector<std::uint32_t>{500, 3, 7}), boost::test_tools::per_element());
  BOOST_TEST(b.row_start == (std::vector<std::uint32_t>{0, 1, 3}),
             boost::test_tools::per_element());
  BOOST_TEST(b.local == (std::vector<std::uint32_t>{0, 1, 2}), boost::test_tools::per_element());
  BOOST_TEST(b.value == (std::vector<float>{5, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(b.labels == (std::vector<float>{1, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(gradients_match_finite_differences) {
  for (const SparseModelSpec spec :
       {SparseModelSpec{.type = SparseModelType::kLogistic},
        SparseModelSpec{.type = SparseModelType::kSoftmax, .classes = 3},
        SparseModelSpec{.type = SparseModelType::kFm, .factors = 3}}) {
    const SparseModel model(spec);
    const data::SparseRows d = Rows(spec.classes, 5);
    const std::vector<std::uint32_t> all = AllRows(d);
    const SparseBatch batch = MakeSparseBatch(d, all);
    std::vector<float> slots = Random(batch.keys.size() * model.SlotWidth(), 1);
    std::vector<float> globals = Random(model.GlobalWidth(), 2);
    std::vector<float> grad_slots(slots.size()), grad_globals(globals.size());
    model.ForwardBackward(batch, slots.data(), globals.data(), grad_slots.data(),
                          grad_globals.data());
    std::vector<float> scratch_slots(slots.size()), scratch_globals(globals.size());
    const auto loss = [&] {
      return model
                 .ForwardBackward(batch, slots.data(), globals.data(), scratch_slots.data(),
                                  scratch_globals.data())
                 .loss_sum /
             batch.rows();
    };
    BOOST_TEST_CONTEXT("type " << static_cast<int>(spec.type)) {
      testing::CheckCentralDifferences(slots, grad_slots, loss, {.what = "slot"});
      testing::CheckCentralDifferences(globals, grad_globals, loss, {.what = "global"});
    }
  }
}

BOOST_AUTO_TEST_CASE(logistic_and_softmax_equal_the_dense_models) {
  for (const int classes : {2, 4}) {
    const bool softmax = classes > 2;
    const SparseModel sparse(
        softmax ? SparseModelSpec{.type = SparseModelType::kSoftmax, .classes = classes}
                : SparseModelSpec{.type = SparseModelType::kLogistic});
    model::ModelSpec spec;
    spec.type = softmax ? model::ModelType::kSoftmax : model::ModelType::kLogistic;
    spec.inputs = kFeatures;
    spec.outputs = softmax ? classes : 1;
    spec.loss =
        softmax ? model::LossType::kSoftmaxCrossEntropy : model::LossType::kBinaryCrossEntropy;
    const model::Model dense(spec);
    BOOST_TEST_REQUIRE(dense.NumParams() == kFeatures * sparse.SlotWidth() + sparse.GlobalWidth());

    const data::SparseRows d = Rows(classes, 9);
    const std::vector<std::uint32_t> all = AllRows(d);
    const SparseBatch batch = MakeSparseBatch(d, all);
    const std::vector<float> params = Random(dense.NumParams(), 3);
    // The slots of the batch's keys, cut out of the dense parameters.
    const std::size_t width = sparse.SlotWidth();
    std::vector<float> slots;
    for (std::uint32_t key : batch.keys) {
      slots.insert(slots.end(), params.begin() + key * width, params.begin() + (key + 1) * width);
    }
    const float* globals = params.data() + kFeatures * width;
    std::vector<float> grad_slots(slots.size()), grad_globals(sparse.GlobalWidth());
    const model::LossValue s = sparse.ForwardBackward(batch, slots.data(), globals,
                                                      grad_slots.data(), grad_globals.data());

    const data::Dataset rows = data::Densify(d);
    model::Workspace ws(dense, batch.rows());
    std::vector<float> grad(dense.NumParams());
    const model::LossValue v = dense.ForwardBackward(
        params.data(), rows.floats.data(), rows.labels.data(), batch.rows(), 0.0f, grad.data(), ws);
    BOOST_TEST(s.loss_sum == v.loss_sum, boost::test_tools::tolerance(1e-5));
    BOOST_TEST(s.correct == v.correct);
    std::vector<float> scattered(dense.NumParams(), 0.0f);
    for (std::size_t k = 0; k < batch.keys.size(); ++k) {
      std::copy_n(grad_slots.begin() + k * width, width, scattered.begin() + batch.keys[k] * width);
    }
    std::copy(grad_globals.begin(), grad_globals.end(), scattered.begin() + kFeatures * width);
    for (std::size_t i = 0; i < grad.size(); ++i) {
      BOOST_TEST(scattered[i] == grad[i], boost::test_tools::tolerance(1e-4f));
    }
  }
}

BOOST_AUTO_TEST_CASE(fm_slots_start_the_same_in_every_process) {
  const SparseModel fm({.type = SparseModelType::kFm, .factors = 4, .init_scale = 0.1f});
  std::vector<float> a(fm.SlotWidth()), b(fm.SlotWidth()), c(fm.SlotWidth());
  fm.InitSlot(7, 123456789, a.data());
  fm.InitSlot(7, 123456789, b.data());
  fm.InitSlot(7, 123456790, c.data());
  BOOST_TEST(a == b, boost::test_tools::per_element());
  BOOST_TEST(a != c);
  BOOST_TEST(a[0] == 0.0f);  // the linear weight starts at 0
  for (std::size_t f = 1; f < a.size(); ++f) BOOST_TEST(std::abs(a[f]) <= 0.1f);
  BOOST_TEST(!ValidateSparseModelSpec({.type = SparseModelType::kFm, .factors = 0}).ok());
  BOOST_TEST(!ValidateSparseModelSpec({.type = SparseModelType::kSoftmax, .classes = 1}).ok());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace sparse_model_test
}  // namespace dtrain::sparse
