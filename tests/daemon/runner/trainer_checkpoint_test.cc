// CheckNothingOwed: a checkpoint is a trainer's place (step, epoch, batch) and nothing more, so a
// trainer that owes rows to its next step (a step of backup workers went on without this
// replica's gradient) refuses one, naming the step; after a step that took every gradient, or once
// a checkpoint's position is restored, it owes none.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/data/dataset.h"
#include "core/dist/replica_harness.h"
#include "daemon/runner/trainer_checkpoint.h"

namespace dtrain::runner {
namespace trainer_checkpoint_test {

// Rank 0 of two replicas whose strategy reports the masks a test gives it, applying nothing.
class GivenMasks final : public train::Strategy {
 public:
  explicit GivenMasks(std::vector<std::uint64_t> masks) : masks_(std::move(masks)) {}
  Status Apply(std::int64_t, std::span<float>, std::span<float>, float,
               const train::StepShare&) override {
    return Status::Ok();
  }
  optim::Optimizer* LocalOptimizer() override { return nullptr; }
  std::span<const std::uint64_t> TakenMasks() const override { return masks_; }

 private:
  std::vector<std::uint64_t> masks_;
};

class OneStep final : public train::TrainListener {
 public:
  void Record(std::span<const train::MetricPoint>) override {}
  bool AfterStep(const train::Trainer&) override { return false; }
};

// Rank 0 of two, 4 rows each of a global batch of 8, after one step whose strategy said `masks`.
struct AfterOneStep {
  explicit AfterOneStep(std::vector<std::uint64_t> masks)
      : set(dist::testing::Blobs(120)),
        model(dist::testing::SmallSpec()),
        strategy(std::move(masks)),
        trainer(model, Options(), set, nullptr, data::ConstantScaling(1.0f), strategy) {
    trainer.InitParams();
    OneStep listener;
    BOOST_REQUIRE(trainer.Run(listener).ok());
    BOOST_REQUIRE(trainer.position().step == 1);
  }
  static train::TrainOptions Options() {
    train::TrainOptions o = dist::testing::GlobalBatchOptions(4, 0, 2);
    o.backup_workers = 1;
    return o;
  }
  data::Dataset set;
  model::Model model;
  GivenMasks strategy;
  train::Trainer trainer;
};

BOOST_AUTO_TEST_SUITE(trainer_checkpoint)

BOOST_AUTO_TEST_CASE(a_trainer_owing_rows_refuses_a_checkpoint_naming_the_step) {
  AfterOneStep s({0b10});  // rank 1's gradient taken, rank 0's left out
  BOOST_TEST(s.trainer.owed().size() == 4u);
  const Status whole = CheckNothingOwed(s.trainer);
  BOOST_TEST(!whole.ok());
  BOOST_TEST(whole.message().find("internal error: the checkpoint at step 1 would leave 4 rows "
                                  "owed to the next step") != std::string::npos,
             whole.message());
  // A checkpoint restored (its position set) owes nothing.
  s.trainer.set_position(s.trainer.position());
  BOOST_TEST(CheckNothingOwed(s.trainer).ok());
}

BOOST_AUTO_TEST_CASE(after_a_step_that_took_every_gradient_nothing_is_owed) {
  AfterOneStep s({0b11});
  BOOST_TEST(s.trainer.owed().empty());
  BOOST_TEST(CheckNothingOwed(s.trainer).ok());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace trainer_checkpoint_test
}  // namespace dtrain::runner
