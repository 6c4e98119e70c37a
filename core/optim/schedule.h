// Learning-rate schedules: the learning rate as a pure function of the global step (0-based).
//
//   ScheduleOptions s{.type = ScheduleType::kCosine, .lr = 0.1f, .warmup_steps = 100,
//                     .total_steps = 10000};
//   opt->Step(params, grad, LearningRate(s, step));
//
// With W = warmup_steps and the post-warm-up step k = step - W (all maths in double):
//   step < W     lr * (step + 1) / W                   linear warm-up, reaching lr at step W - 1
//   kConstant    lr
//   kStep        lr * gamma^floor(k / step_size)
//   kCosine      min_lr + (lr - min_lr) * (1 + cos(pi * min(k / (total_steps - W), 1))) / 2
//                i.e. lr at step W, min_lr at total_steps and after (min_lr if total_steps <= W)
// Negative steps count as step 0; options that fail ValidateScheduleOptions still yield a number
// (never a division by zero). Being a function of the step alone, every replica and shard
// agrees on the rate and a restored checkpoint resumes it exactly. Safe for concurrent use.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/status.h"

namespace dtrain::optim {

enum class ScheduleType { kConstant, kStep, kCosine };

struct ScheduleOptions {
  ScheduleType type = ScheduleType::kConstant;
  float lr = 0.01f;               // > 0: the peak rate, reached at the end of warm-up
  std::int64_t warmup_steps = 0;  // >= 0, for every type
  std::int64_t step_size = 1000;  // kStep: >= 1
  float gamma = 0.1f;             // kStep: > 0
  std::int64_t total_steps = 0;   // kCosine: > warmup_steps
  float min_lr = 0.0f;            // kCosine: in [0, lr]
};

// OK when every field used by s.type is in its documented range; otherwise names the field.
Status ValidateScheduleOptions(const ScheduleOptions& s);

float LearningRate(const ScheduleOptions& s, std::int64_t step);

// Configuration names: "constant", "step", "cosine".
std::string_view ScheduleTypeName(ScheduleType type);
Result<ScheduleType> ParseScheduleType(std::string_view name);  // error lists the choices
std::string_view ScheduleTypeChoices();                         // "constant, step, cosine"

}  // namespace dtrain::optim
