// Learning-rate schedules at specific steps, warm-up shape, validation and names.
#include "core/optim/schedule.h"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>

namespace dtrain::optim {
namespace schedule_test {

namespace tt = boost::test_tools;

BOOST_AUTO_TEST_SUITE(optim)

BOOST_AUTO_TEST_CASE(constant_schedule_is_lr_at_every_step) {
  const ScheduleOptions s{.type = ScheduleType::kConstant, .lr = 0.05f};
  for (std::int64_t step : {0, 1, 999, 1'000'000'000}) BOOST_TEST(LearningRate(s, step) == 0.05f);
}

BOOST_AUTO_TEST_CASE(constant_schedule_with_warmup_ramps_linearly_to_lr) {
  const ScheduleOptions s{.type = ScheduleType::kConstant, .lr = 0.05f, .warmup_steps = 4};
  BOOST_TEST(LearningRate(s, 0) == 0.0125f, tt::tolerance(1e-6f));
  BOOST_TEST(LearningRate(s, 1) == 0.025f, tt::tolerance(1e-6f));
  BOOST_TEST(LearningRate(s, 2) == 0.0375f, tt::tolerance(1e-6f));
  BOOST_TEST(LearningRate(s, 3) == 0.05f);
  BOOST_TEST(LearningRate(s, 4) == 0.05f);
  BOOST_TEST(LearningRate(s, 100) == 0.05f);
}

BOOST_AUTO_TEST_CASE(step_schedule_decays_by_gamma_every_step_size_steps) {
  const ScheduleOptions s{.type = ScheduleType::kStep, .lr = 1.0f, .step_size = 10, .gamma = 0.5f};
  BOOST_TEST(LearningRate(s, 0) == 1.0f);
  BOOST_TEST(LearningRate(s, 9) == 1.0f);
  BOOST_TEST(LearningRate(s, 10) == 0.5f);
  BOOST_TEST(LearningRate(s, 19) == 0.5f);
  BOOST_TEST(LearningRate(s, 20) == 0.25f);
  BOOST_TEST(LearningRate(s, 35) == 0.125f);
}

BOOST_AUTO_TEST_CASE(step_schedule_counts_its_decays_after_warmup) {
  const ScheduleOptions s{
      .type = ScheduleType::kStep, .lr = 1.0f, .warmup_steps = 5, .step_size = 10, .gamma = 0.5f};
  BOOST_TEST(LearningRate(s, 0) == 0.2f, tt::tolerance(1e-6f));
  BOOST_TEST(LearningRate(s, 4) == 1.0f);
  BOOST_TEST(LearningRate(s, 5) == 1.0f);
  BOOST_TEST(LearningRate(s, 14) == 1.0f);
  BOOST_TEST(LearningRate(s, 15) == 0.5f);
  BOOST_TEST(LearningRate(s, 25) == 0.25f);
}

BOOST_AUTO_TEST_CASE(cosine_schedule_falls_from_lr_to_min_lr_at_total_steps) {
  const ScheduleOptions s{
      .type = ScheduleType::kCosine, .lr = 1.0f, .total_steps = 100, .min_lr = 0.1f};
  const float quarter =
      static_cast<float>(0.1 + 0.9 * 0.5 * (1.0 + std::cos(std::numbers::pi / 4)));
  BOOST_TEST(LearningRate(s, 0) == 1.0f);
  BOOST_TEST(LearningRate(s, 25) == quarter, tt::tolerance(1e-6f));
  BOOST_TEST(LearningRate(s, 50) == 0.55f, tt::tolerance(1e-6f));
  BOOST_TEST(LearningRate(s, 100) == 0.1f, tt::tolerance(1e-6f));
  BOOST_TEST(LearningRate(s, 500) == 0.1f, tt::tolerance(1e-6f));
  for (std::int64_t step = 1; step <= 100; ++step) {
    BOOST_TEST(LearningRate(s, step) < LearningRate(s, step - 1), "at step " << step);
  }
}

BOOST_AUTO_TEST_CASE(cosine_schedule_with_warmup_starts_its_decay_after_warmup) {
  const ScheduleOptions s{.type = ScheduleType::kCosine,
                          .lr = 1.0f,
                          .warmup_steps = 20,
                          .total_steps = 120,
                          .min_lr = 0.1f};
  BOOST_TEST(LearningRate(s, 0) == 0.05f, tt::tolerance(1e-6f));
  BOOST_TEST(LearningRate(s, 19) == 1.0f);
  BOOST_TEST(LearningRate(s, 20) == 1.0f);
  BOOST_TEST(LearningRate(s, 70) == 0.55f, tt::tolerance(1e-6f));
  BOOST_TEST(LearningRate(s, 120) == 0.1f, tt::tolerance(1e-6f));
  BOOST_TEST(LearningRate(s, 121) == 0.1f, tt::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(warmup_rises_strictly_from_lr_over_warmup_to_lr_for_every_type) {
  for (ScheduleType type : {ScheduleType::kConstant, ScheduleType::kStep, ScheduleType::kCosine}) {
    const ScheduleOptions s{
        .type = type, .lr = 0.3f, .warmup_steps = 50, .step_size = 7, .total_steps = 80};
    const std::string name(ScheduleTypeName(type));
    BOOST_TEST(LearningRate(s, 0) == 0.3f / 50, tt::tolerance(1e-6f));
    BOOST_TEST(LearningRate(s, 49) == 0.3f, name);
    for (std::int64_t step = 1; step < 50; ++step) {
      BOOST_TEST(LearningRate(s, step) > LearningRate(s, step - 1), name << " at step " << step);
    }
  }
}

BOOST_AUTO_TEST_CASE(negative_steps_count_as_step_zero) {
  const ScheduleOptions s{.type = ScheduleType::kConstant, .lr = 1.0f, .warmup_steps = 10};
  BOOST_TEST(LearningRate(s, -5) == LearningRate(s, 0));
}

BOOST_AUTO_TEST_CASE(schedule_options_are_validated_per_type) {
  BOOST_TEST(ValidateScheduleOptions({}).ok());
  BOOST_TEST(ValidateScheduleOptions({.type = ScheduleType::kStep}).ok());
  BOOST_TEST(ValidateScheduleOptions({.type = ScheduleType::kCosine, .total_steps = 1000}).ok());

  const ScheduleOptions bad[] = {
      {.lr = 0.0f},
      {.lr = std::nanf("")},
      {.warmup_steps = -1},
      {.type = ScheduleType::kStep, .step_size = 0},
      {.type = ScheduleType::kStep, .gamma = 0.0f},
      {.type = ScheduleType::kCosine},  // total_steps missing
      {.type = ScheduleType::kCosine, .warmup_steps = 100, .total_steps = 100},
      {.type = ScheduleType::kCosine, .lr = 0.1f, .total_steps = 100, .min_lr = 0.2f},
  };
  for (const ScheduleOptions& s : bad) {
    const Status status = ValidateScheduleOptions(s);
    BOOST_TEST(!status.ok(), ScheduleTypeName(s.type));
    BOOST_TEST(status.message().find(ScheduleTypeName(s.type)) != std::string::npos,
               status.message());
  }
}

BOOST_AUTO_TEST_CASE(schedule_names_round_trip_and_a_bad_name_lists_the_choices) {
  BOOST_TEST(ScheduleTypeChoices() == "constant, step, cosine");
  for (ScheduleType t : {ScheduleType::kConstant, ScheduleType::kStep, ScheduleType::kCosine}) {
    const Result<ScheduleType> parsed = ParseScheduleType(ScheduleTypeName(t));
    BOOST_REQUIRE(parsed.ok());
    BOOST_TEST((parsed.value() == t));
    BOOST_TEST(ScheduleTypeChoices().find(ScheduleTypeName(t)) != std::string_view::npos);
  }
  const Result<ScheduleType> bad = ParseScheduleType("exponential");
  BOOST_REQUIRE(!bad.ok());
  BOOST_TEST(bad.status().message().find("'exponential'") != std::string::npos);
  BOOST_TEST(bad.status().message().find(ScheduleTypeChoices()) != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace schedule_test
}  // namespace dtrain::optim
