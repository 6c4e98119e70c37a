// A sparse model's checkpoint keeps exactly the touched keys (a key's u32 bits survive the float
// vector, up to 2^32 - 1), their slots, the optimizer's state and the position, through the
// store's encoding; one of another model or seed is refused before the table changes.
#include "daemon/runner/sparse_checkpoint.h"

#include <boost/test/unit_test.hpp>
#include <vector>

namespace dtrain::runner {
namespace sparse_checkpoint_test {

using sparse::SparseModelSpec;
using sparse::SparseModelType;

BOOST_AUTO_TEST_SUITE(sparse_checkpoint)

BOOST_AUTO_TEST_CASE(a_table_survives_the_stores_encoding) {
  const SparseModelSpec spec{.type = SparseModelType::kFm, .factors = 2};
  const sparse::SparseModel fm(spec);
  sparse::KeyTable table(fm, {.type = optim::OptimizerType::kFtrl}, 4);
  // Keys whose bit patterns are NaNs and infinities as floats, and the largest key.
  const std::vector<std::uint32_t> keys{0x7F800001u, 0x7FC00000u, 0xFFFFFFFFu, 0x7F800000u, 12};
  std::vector<float> slots(keys.size() * 3), grad(slots.size(), 0.5f), globals_grad{0.25f};
  table.Pull(keys, slots.data());
  table.Push(keys, grad.data(), globals_grad.data(), 0.1f);
  const train::TrainPosition at{17, 2, 5};

  const train::EarlyStoppingState early{0.25, 12, 2};

  const std::string blob =
      store::EncodeCheckpoint(SparseCheckpoint(table.Snapshot(), spec, at, 9, early));
  Result<store::CheckpointData> decoded = store::DecodeCheckpoint(blob);
  BOOST_REQUIRE(decoded.ok());
  BOOST_TEST((decoded.value().early_stopping == early));  // a resumed run judges on from it
  sparse::KeyTable back(fm, {.type = optim::OptimizerType::kFtrl}, 4);
  Result<train::TrainPosition> restored = RestoreSparseCheckpoint(decoded.value(), spec, 9, back);
  BOOST_REQUIRE_MESSAGE(restored.ok(), restored.status().message());
  BOOST_TEST(restored.value().step == 17);
  BOOST_TEST(restored.value().epoch == 2u);
  BOOST_TEST(restored.value().batch == 5u);
  const sparse::KeyTableState a = table.Snapshot(), b = back.Snapshot();
  BOOST_TEST(a.keys == b.keys);
  BOOST_TEST(a.slots == b.slots);
  BOOST_TEST(a.globals == b.globals);
  BOOST_TEST(a.state == b.state);
}

BOOST_AUTO_TEST_CASE(another_model_or_seed_is_refused) {
  const SparseModelSpec spec{.type = SparseModelType::kLogistic};
  const sparse::SparseModel logistic(spec);
  sparse::KeyTable table(logistic, {.type = optim::OptimizerType::kSgd}, 1);
  const store::CheckpointData c = SparseCheckpoint(table.Snapshot(), spec, {}, 1, {});
  const SparseModelSpec fm{.type = SparseModelType::kFm, .factors = 3};
  BOOST_TEST(RestoreSparseCheckpoint(c, fm, 1, table).status().message().find("sparse_logistic") !=
             std::string::npos);
  BOOST_TEST(RestoreSparseCheckpoint(c, spec, 2, table).status().message().find("seed") !=
             std::string::npos);
  sparse::KeyTable adagrad(logistic, {.type = optim::OptimizerType::kAdagrad}, 1);
  BOOST_TEST(!RestoreSparseCheckpoint(c, spec, 1, adagrad).ok());  // no accumulator to restore
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace sparse_checkpoint_test
}  // namespace dtrain::runner
