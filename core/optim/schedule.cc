#include "core/optim/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "core/name_table.h"

namespace dtrain::optim {
namespace {

constexpr NameTable<ScheduleType, 3> kScheduleTypes{{{{ScheduleType::kConstant, "constant"},
                                                      {ScheduleType::kStep, "step"},
                                                      {ScheduleType::kCosine, "cosine"}}},
                                                    "constant, step, cosine"};

}  // namespace

Status ValidateScheduleOptions(const ScheduleOptions& s) {
  const std::string name(ScheduleTypeName(s.type));
  if (!(s.lr > 0.0f) || !std::isfinite(s.lr)) {
    return Status::Error("schedule " + name + ": lr must be > 0, got " + std::to_string(s.lr));
  }
  if (s.warmup_steps < 0) {
    return Status::Error("schedule " + name + ": warmup_steps must be >= 0, got " +
                         std::to_string(s.warmup_steps));
  }
  switch (s.type) {
    case ScheduleType::kConstant:
      break;
    case ScheduleType::kStep:
      if (s.step_size < 1) {
        return Status::Error("schedule step: step_size must be >= 1, got " +
                             std::to_string(s.step_size));
      }
      if (!(s.gamma > 0.0f)) {
        return Status::Error("schedule step: gamma must be > 0, got " + std::to_string(s.gamma));
      }
      break;
    case ScheduleType::kCosine:
      if (s.total_steps <= s.warmup_steps) {
        return Status::Error("schedule cosine: total_steps (" + std::to_string(s.total_steps) +
                             ") must be greater than warmup_steps (" +
                             std::to_string(s.warmup_steps) + ")");
      }
      if (!(s.min_lr >= 0.0f && s.min_lr <= s.lr)) {
        return Status::Error("schedule cosine: min_lr must be in [0, lr], got " +
                             std::to_string(s.min_lr));
      }
      break;
  }
  return Status::Ok();
}

float LearningRate(const ScheduleOptions& s, std::int64_t step) {
  step = std::max<std::int64_t>(step, 0);
  const double lr = s.lr;
  const std::int64_t warmup = std::max<std::int64_t>(s.warmup_steps, 0);
  if (step < warmup) {
    return static_cast<float>(lr * static_cast<double>(step + 1) / static_cast<double>(warmup));
  }
  const std::int64_t k = step - warmup;
  switch (s.type) {
    case ScheduleType::kConstant:
      return s.lr;
    case ScheduleType::kStep: {
      const std::int64_t decays = k / std::max<std::int64_t>(s.step_size, 1);
      return static_cast<float>(lr * std::pow(double{s.gamma}, static_cast<double>(decays)));
    }
    case ScheduleType::kCosine: {
      const std::int64_t span = s.total_steps - warmup;
      const double progress =
          span > 0 ? std::min(static_cast<double>(k) / static_cast<double>(span), 1.0) : 1.0;
      const double min_lr = s.min_lr;
      return static_cast<float>(min_lr + (lr - min_lr) * 0.5 *
                                             (1.0 + std::cos(std::numbers::pi * progress)));
    }
  }
  return s.lr;
}

std::string_view ScheduleTypeName(ScheduleType type) { return kScheduleTypes.Name(type); }
Result<ScheduleType> ParseScheduleType(std::string_view name) {
  return kScheduleTypes.Parse(name, "schedule");
}
std::string_view ScheduleTypeChoices() { return kScheduleTypes.choices; }

}  // namespace dtrain::optim
